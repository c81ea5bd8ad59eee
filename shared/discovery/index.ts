export { localCloudFile, readLocalCloudFile, removeLocalCloudFile, writeLocalCloudFile, type LocalCloudDescription } from './local-file.ts';
