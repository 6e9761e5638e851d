package kbrec

import (
	"strings"

	"github.com/crewlet/crewlet/engine"
)

// SubjectPrefix is the knowledge base's subject tree on its stream,
// statelog.SubjectPrefix(engine.DomainPages) (a test holds the two
// equal; this package imports no framework).
const SubjectPrefix = "crewlet." + string(engine.DomainPages) + "."

// Subjects of the pages stream: one per space (its creation and
// settings), one per page (its creation, edits, moves and purge) and one
// per comment.

// SpaceSubject is the subject of the records about space key.
func SpaceSubject(key string) string { return SubjectPrefix + "space." + key }

// PageSubject is the subject of the records about page id.
func PageSubject(id string) string { return SubjectPrefix + "page." + id }

// PageOfSubject returns the page id a subject is about, if it is a page's.
func PageOfSubject(subject string) (string, bool) {
	return strings.CutPrefix(subject, SubjectPrefix+"page.")
}

// CommentSubject is the subject of the records about comment id.
func CommentSubject(id string) string { return SubjectPrefix + "comment." + id }

// SpaceScope is the declared scope naming space key.
func SpaceScope(key string) string { return "space:" + key }

// PageScope is the declared scope naming page id.
func PageScope(id string) string { return "page:" + id }

// ScopedPage is the page a declared scope names, if it names one.
func ScopedPage(scope string) (id string, ok bool) { return strings.CutPrefix(scope, "page:") }
