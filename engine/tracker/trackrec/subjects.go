package trackrec

import (
	"strings"

	"github.com/crewlet/crewlet/engine"
)

// SubjectPrefix is the tracker's subject tree on its stream,
// statelog.SubjectPrefix(engine.DomainTracker) (a test holds the two
// equal; this package imports no framework).
const SubjectPrefix = "crewlet." + string(engine.DomainTracker) + "."

// ProjectSubject is the subject of the records about project key.
func ProjectSubject(key string) string { return SubjectPrefix + "project." + key }

// ItemSubject is the subject of the records about item id.
func ItemSubject(id string) string { return SubjectPrefix + "item." + id }

// ItemOfSubject is the item id a subject is about, "" for another.
func ItemOfSubject(subject string) string {
	id, ok := strings.CutPrefix(subject, SubjectPrefix+"item.")
	if !ok {
		return ""
	}
	return id
}

// ProjectScope is the declared scope naming project key.
func ProjectScope(key string) string { return "project:" + key }

// InProject is the declared scope entry saying an item is in project key
// (statelog.MemberPrefix): a retained record that changes the project (a
// bulk update, a create bumping its counter) covers the item's later
// records and reads, while the item's own records cover no neighbour.
func InProject(key string) string { return "in:" + ProjectScope(key) }

// ItemScope is the declared scope naming item id.
func ItemScope(id string) string { return "item:" + id }

// ScopedItem is the item a declared scope names, if it names one.
func ScopedItem(scope string) (id string, ok bool) { return strings.CutPrefix(scope, "item:") }
