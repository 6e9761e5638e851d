package trackapply

// TraceStatements tells trace the rows of every multi-row statement the
// apply runs (its table's INSERT or row-write head, and how many rows),
// until the returned func undoes it. Set it before any replica opens and
// undo it after they close: the appliers read it unguarded.
func TraceStatements(trace func(head string, rows int)) (undo func()) {
	traceStatement = trace
	return func() { traceStatement = nil }
}
