import {
  EXTERNAL_API_FAULTS, startExternalApi, type ExternalApi, type ExternalApiChaos, type ExternalApiFaultKind,
} from '@ballast-stack/ballast/local';

/**
 * The external partner profile API that `account.sync-profile` calls: an {@link ExternalApi} on
 * `POST /profiles/{accountId}/sync` that answers a profile whose tier follows its revision.
 */
export type PartnerApi = ExternalApi;
/** Random faults of the partner (the chaos run's); see {@link ExternalApiChaos}. */
export type PartnerChaos = ExternalApiChaos;
/** What a misbehaving partner does to one request. */
export const PARTNER_FAULTS = EXTERNAL_API_FAULTS;
export type PartnerFaultKind = ExternalApiFaultKind;

export function startPartnerApi(options: { port?: number } = {}): Promise<PartnerApi> {
  return startExternalApi({
    name: 'partner',
    path: /^\/profiles\/([^/]+)\/sync$/,
    answer: ({ resourceId, revision, key }) => ({ accountId: resourceId, revision, tier: ['bronze', 'silver', 'gold'][revision % 3], syncedBy: key }),
    // The partner's own non-object answers, so chaos runs answer as before.
    nonObjectBodies: ['["not","a","profile"]', '"ok"'],
    port: options.port,
  });
}
