// Package fleettools is the replication tools (the fleet toolset, every
// tool operator only): retention_status, the replication answer, and
// evict_node and readmit_node, the node gates. It is built over the
// node's own services, not a domain's.
package fleettools
