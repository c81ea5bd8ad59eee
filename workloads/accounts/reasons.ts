/** Why the account example's jobs are refused (each a DLQ `ballast.reason`, a metric dimension, a replay filter). */
export const ACCOUNT_REASONS = {
  /** A debit larger than the balance: a business rule, never retried. */
  insufficientFunds: 'insufficient-funds',
  /** The job names an account that does not exist. */
  accountNotFound: 'account-not-found',
  /** The partner API refused the sync, or answered with something that is not a profile. */
  partnerRejected: 'partner-rejected',
} as const;
