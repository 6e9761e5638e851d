// Package fleet is what data nodes know of each other: the positions
// register, a JetStream KV bucket in which every data node publishes, per
// domain, the position its rows stand at (seq, applied_through, the
// generation, stream_created_at, checkpoint_stored_at) on every heartbeat,
// and the retention answer built from it for `crewlet retention status`
// and GET /api/v1/retention. A node enters the register at position zero
// the moment it starts, before its first beat, so it is in every log's
// counted set from its start.
package fleet
