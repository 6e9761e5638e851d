// Package mcp serves Crewlet's tools over the Model Context Protocol: it
// assembles mcp-go servers per surface (the operator MCP over Streamable
// HTTP, the assistant over stdio, a local proxy to a running node), with
// panic recovery, bearer-token auth and Host/Origin checks. It knows
// package tools and the engine's vocabulary, never the engine's internals.
package mcp
