// Package engine is Crewlet's vocabulary: positions on a domain's log and
// their token, read levels, write outcomes, the one table of refusal codes,
// and the log keys every package writes under. It imports nothing from the
// project, so every other package can speak it.
package engine
