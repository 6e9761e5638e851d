//go:build integration

package main

import (
	"github.com/crewlet/crewlet/tools/trackertools"
)

// lifeSteps are the tracker's lifecycle tools in the plans: each answered
// once and refused once, after the tracker's steps (projects ${P} and ${Q}
// and item ${P}-1 exist).
func lifeSteps() []step {
	s := func(tool string, args map[string]any, expect string) step {
		return step{Tool: tool, Args: args, Expect: expect}
	}
	op := func(st step) step { st.OperatorOnly = true; return st }
	return []step{
		s(trackertools.NameListWorkItemHistory, map[string]any{"key": "${P}-1", "limit": 5}, expectOK),
		s(trackertools.NameListWorkItemHistory, map[string]any{"key": "${P}-999"}, "not_found"),
		s(trackertools.NameListComments, map[string]any{"key": "${P}-1", "limit": 5}, expectOK),
		s(trackertools.NameListComments, map[string]any{"key": "${P}-999"}, "not_found"),
		s(trackertools.NameGetProject, map[string]any{"key": "${P}"}, expectOK),
		s(trackertools.NameGetProject, map[string]any{"key": "${NOPROJECT}"}, "not_found"),
		s(trackertools.NameBulkCreateWorkItems, map[string]any{"project": "${Q}", "items": []any{map[string]any{"title": "Bulk one"}, map[string]any{"title": "Bulk two", "tags": []any{"bulk"}}}}, expectOK),
		s(trackertools.NameBulkCreateWorkItems, map[string]any{"project": "${Q}", "items": []any{map[string]any{"title": ""}}}, "invalid_argument"),
		s(trackertools.NameBulkUpdateWorkItems, map[string]any{"project": "${Q}", "tag": "bulk", "set": map[string]any{"assignee": "bob"}}, expectOK),
		s(trackertools.NameBulkUpdateWorkItems, map[string]any{"project": "${Q}", "tag": "bulk", "set": map[string]any{}}, "invalid_argument"),
		s(trackertools.NameUpdateProject, map[string]any{"key": "${Q}", "name": "Beta ${Q}, renamed"}, expectOK),
		s(trackertools.NameUpdateProject, map[string]any{"key": "${NOPROJECT}", "name": "Nowhere"}, "not_found"),
		op(s(trackertools.NameEmptyTrash, map[string]any{"project": "${P}"}, expectOK)),
		op(s(trackertools.NameEmptyTrash, map[string]any{"project": "${NOPROJECT}"}, "not_found")),
	}
}
