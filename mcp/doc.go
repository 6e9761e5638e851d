// Package mcp serves Crewlet's tools over the Model Context Protocol: it
// assembles mcp-go servers per surface (the operator MCP over Streamable
// HTTP, the seat MCP, the assistant over stdio, a local proxy to a running
// node) with panic recovery. Bearer-token auth and the Host/Origin checks
// are the HTTP edge's (httpedge.Guard), put in front of these handlers
// where they are mounted. It knows package tools and the engine's
// vocabulary, never the engine's internals.
package mcp
