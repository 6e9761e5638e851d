package trackapply

// TraceStatements tells trace the rows of every multi-row statement the
// apply runs (its table's INSERT or row-write head, and how many rows),
// until the returned func undoes it. Set it before any replica opens and
// undo it after they close: the appliers read it unguarded.
func TraceStatements(trace func(head string, rows int)) (undo func()) {
	traceStatement = trace
	return func() { traceStatement = nil }
}

// RowBulk makes every bulk record take the row-by-row apply until the
// returned func undoes it; the same caveat as TraceStatements holds.
func RowBulk() (undo func()) {
	bulkApply = (*apply).bulkByRow
	return func() { bulkApply = (*apply).bulkBySet }
}

// SetChunk cuts bulkBySet's ids n to a statement until the returned func
// undoes it, so a few items cross statements.
func SetChunk(n int) (undo func()) {
	setChunk = n
	return func() { setChunk = MaxRowsPerStatement }
}

// PostingByDeleteInsert makes a title or description edit delete its
// item's search posting and insert it again, as builds before the
// in-place rewrite do, until the returned func undoes it; the same caveat
// as TraceStatements holds.
func PostingByDeleteInsert() (undo func()) {
	postingInPlace = false
	return func() { postingInPlace = true }
}
