// Package kbtools is the knowledge base's tools (the kb toolset): spaces,
// pages, their versions, comments and search, each defined once over the
// kb service (KB), with pages and spaces as MCP resources and their
// completions. It is built on the tools kit and knows the kb service's
// API, never NATS or SQL.
package kbtools
