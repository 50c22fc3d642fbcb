// Only for `vite` (the dev server) in this checkout: www/node_modules/runstore is a link to
// the repository root (`"runstore": "file:.."`), which lies outside www/, and the dev server
// serves files outside its root only when allowed. Installed from npm (or from a packed
// tarball) the package sits inside node_modules and needs no configuration; `vite build` never
// does.
export default {
  server: { fs: { allow: ['..'] } },
};
