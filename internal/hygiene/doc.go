// Package hygiene holds repository-wide tests: the import rules between
// packages, a package comment on every package, no machine-specific
// absolute paths in sources or docs, and the size limits (no Go file over
// 800 lines, no function over 80). It has no code of its own; the tests
// parse the tree with go/parser, so they run in well under a second.
package hygiene
