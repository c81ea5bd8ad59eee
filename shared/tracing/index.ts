export { ATTRIBUTES, SPANS, TRACE_ATTRIBUTE, TRACEPARENT_MESSAGE_ATTRIBUTE } from './names.ts';
export { annotate, failSpan, inSpan, tracer } from './spans.ts';
export {
  activeSpanContext, activeTraceparent, contextOfRecord, contextOfTraceparent, headersOf, messageAttributesOf, spanContextOfTraceparent,
} from './propagation.ts';
