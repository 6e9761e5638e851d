// Package engine is Crewlet's vocabulary: positions on a domain's log and
// their token, read levels, write outcomes, the one table of refusal codes,
// the log keys every package writes under, and the error a config field is
// refused with. It imports nothing from the project, so every other package
// can speak it.
package engine
