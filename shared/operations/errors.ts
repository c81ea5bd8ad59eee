/** The stack (or one of its services) cannot be reached: not deployed, no local cloud, no credentials, endpoint down. */
export class StackUnreachableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StackUnreachableError';
  }
}
