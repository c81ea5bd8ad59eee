// Bundled in place of `node:http` (see lazy-builtins.ts): the module as require() gives it.
module.exports = process.getBuiltinModule('node:http');
