export {
  acquireLockItem, extendLockItem, lockKey, nextFence, releaseLockItem, LOCK_GC_AFTER_SECONDS,
  type LeaseHold, type LockItem, type TransactItem,
} from './lease-lock.ts';
