// Bundled in place of `node:https` (see lazy-builtins.ts): the module as require() gives it.
module.exports = process.getBuiltinModule('node:https');
