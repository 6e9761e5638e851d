// Package trackertools is the tracker's tools (the tracker toolset):
// projects and work items, their comments, history, gestures (moves,
// merges, trash) and bulk changes, each defined once over the tracker
// service (Tracker), with work items and projects as MCP resources, their
// completions and the tracker's prompts. It is built on the tools kit and
// knows the tracker service's API, never NATS or SQL.
package trackertools
