/**
 * List prices the bench turns its measures into a bill with: on-demand, us-east-1, as published
 * when this was written (Lambda on Arm, the stack's architecture; DynamoDB after its November 2024
 * cut). Change them here for another Region; the units they multiply are in the results either way.
 */
export const PRICES = {
  lambdaGbSecond: 0.0000133334,
  lambdaRequest: 0.2 / 1e6,
  dynamodbWriteUnit: 0.625 / 1e6,
  dynamodbReadUnit: 0.125 / 1e6,
} as const;

/** The sandboxes' memory setting, the stack's default (`BallastFunction`): what the Lambda line prices. */
export const FUNCTION_MEMORY_MB = 512;

/** What a run measured per record, the bill's inputs. */
export interface BilledMeasures {
  /** Invocations' durations, rounded up to the millisecond as Lambda bills them, summed per record. */
  readonly lambdaMsPerRecord: number;
  readonly invocationsPerRecord: number;
  readonly readUnitsPerRecord: number;
  readonly writeUnitsPerRecord: number;
  /** Write units of cancelled transactions: whether DynamoDB bills them its documentation does not say, so they are kept apart. */
  readonly cancelledWriteUnitsPerRecord: number;
}

/** Dollars per million records, by line of the bill. SQS is left out: the mapping's requests are the same for every variant. */
export interface Bill {
  readonly lambda: number;
  readonly dynamodb: number;
  /** The cancelled transactions' write units, were DynamoDB to bill them. */
  readonly cancelled: number;
}

/** The bill for a million records at `memoryMb` (the function's memory setting). */
export function billPerMillionRecords(measures: BilledMeasures, memoryMb: number): Bill {
  const million = 1e6;
  return {
    lambda: million * ((measures.lambdaMsPerRecord / 1000) * (memoryMb / 1024) * PRICES.lambdaGbSecond + measures.invocationsPerRecord * PRICES.lambdaRequest),
    dynamodb: million * (measures.readUnitsPerRecord * PRICES.dynamodbReadUnit + measures.writeUnitsPerRecord * PRICES.dynamodbWriteUnit),
    cancelled: million * measures.cancelledWriteUnitsPerRecord * PRICES.dynamodbWriteUnit,
  };
}
