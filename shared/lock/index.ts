export {
  acquireLockItem, extendLockItem, lockKey, lockWriteOf, nextFence, releaseLockItem, LOCK_GC_AFTER_SECONDS,
  type LeaseHold, type LockItem, type LockWrite, type LockWriteKind, type TransactItem,
} from './lease-lock.ts';
