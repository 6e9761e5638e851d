package engine

import "context"

type progressKey struct{}

// Progress is told how far long work has come: done of total units (a
// bulk update's items, a bulk create's items, a trash's purges), 0 of
// total once the work is known and before any of it is done. It is called
// from the goroutine doing the work and must not block.
type Progress func(done, total int)

// WithProgress names who is told the progress of work done under ctx (a
// tool call's MCP progress notifications, a log line).
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ReportProgress tells ctx's Progress, if any, that done of total units
// are done.
func ReportProgress(ctx context.Context, done, total int) {
	if p, _ := ctx.Value(progressKey{}).(Progress); p != nil {
		p(done, total)
	}
}
