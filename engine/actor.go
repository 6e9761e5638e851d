package engine

import "context"

type actorKey struct{}

// WithActor names who asks for the writes made under ctx: "operator" for
// the operator's token (the operator MCP, the assistant, the operator
// routes), "seat:<seat>" for a seat's turn. The write path stamps it on
// the record (its "by"), so the audit trail derived from the log says who.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorOf is the actor WithActor named, empty when none did.
func ActorOf(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}
