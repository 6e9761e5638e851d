package engine

// Log keys every package writes under, so lines are greppable fleet-wide.
const (
	LogComponent = "component"
	LogDomain    = "domain"
	LogStream    = "stream"
	LogPosition  = "position"
	LogOpID      = "op_id"
	LogGate      = "gate"
	LogWriter    = "writer"
	LogErr       = "err"
)

// Components, one per code that writes lines.
const (
	ComponentStatelog = "statelog"
	ComponentEngine   = "engine"
	ComponentBroker   = "broker"
	ComponentStore    = "store"
	ComponentMCP      = "mcp"
	ComponentHTTP     = "http"
	ComponentNode     = "node"
	ComponentEstate   = "estate"
)

// Event names the seeds fix. The slog message is exactly one of these.
const (
	EvApplyRetrying         = "statelog_apply_retrying"
	EvApplyFaulted          = "statelog_apply_faulted"
	EvApplyRecovered        = "statelog_apply_recovered"
	EvApplierStopped        = "statelog_applier_stopped"
	EvRecordGated           = "statelog_record_gated"
	EvWriteGated            = "statelog_write_gated"
	EvPublishUnknown        = "statelog_publish_unknown"
	EvWriteUnvouched        = "statelog_write_unvouched"
	EvConsumerRebuilt       = "jetstream_domain_consumer_rebuilt"
	EvConsumerRebuildFailed = "jetstream_domain_consumer_rebuild_failed"
	// EvReaderLeadClaimed: a node asked that its own broker server lead
	// its durable consumer again (not a seeds line; INFO).
	EvReaderLeadClaimed = "jetstream_reader_lead_claimed"
	// EvReaderUnplaced: a node's reader could not be placed on its own
	// broker server and is a replicated group this time (not a seeds
	// line; WARN).
	EvReaderUnplaced = "jetstream_reader_unplaced"
	// EvReaderPlaced: a node found its reader on another broker server
	// and made it again, at its checkpoint, on its own (not a seeds line;
	// INFO).
	EvReaderPlaced = "jetstream_reader_placed"
	// EvReaderReopened: a running node's reader went away (deleted under
	// it) and was made again after what it had acknowledged; with err,
	// the try failed and is made again (not a seeds line; WARN).
	EvReaderReopened        = "jetstream_reader_reopened"
	EvStreamCapacityDiffers = "jetstream_stream_capacity_differs"
	EvCeilingShortOfFit     = "statelog_ceiling_short_of_fit"
	EvCeilingUnread         = "statelog_ceiling_unread"
	EvStoreTxRetry          = "store_tx_retry"
	EvRederived             = "statelog_rederived"
	// EvTablesRelaid is an open rewriting a domain's tables from an older
	// build's layout into the current one, rows unchanged (not a name of
	// the seeds: a build's own schema step).
	EvTablesRelaid = "statelog_tables_relaid"
)
