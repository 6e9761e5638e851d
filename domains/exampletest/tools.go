package exampletest

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/tools"
)

// The notes' tools.
const (
	ToolsetName = "notes"
	NamePutNote = "put_note"
	NameGetNote = "get_note"
)

// Notes is what the tools call (*Service).
type Notes interface {
	Put(ctx context.Context, w engine.WriteOptions, key, text string) (NoteWrite, error)
	Get(ctx context.Context, r engine.ReadOptions, key string) (NoteRead, error)
}

var _ Notes = (*Service)(nil)

var keyParam = tools.Param{Name: "key", Kind: tools.KindString, Required: true, NonEmpty: true, MaxBytes: 64, Desc: "The note's key."}

// Toolset is the notes' tools over svc: put_note and get_note.
func Toolset(svc Notes) tools.Toolset {
	has := func() bool { return svc != nil }
	return tools.Toolset{Name: ToolsetName, Entries: []tools.Entry{
		{Build: func(d tools.Deps) (mcp.Tool, server.ToolHandlerFunc) { return putNote(d, svc) }, Needs: has},
		{Build: func(d tools.Deps) (mcp.Tool, server.ToolHandlerFunc) { return getNote(d, svc) }, Read: true, Needs: has},
	}}
}

func putNote(d tools.Deps, svc Notes) (mcp.Tool, server.ToolHandlerFunc) {
	params := d.WithOpID([]tools.Param{keyParam,
		{Name: "text", Kind: tools.KindString, Required: true, Long: true, MaxBytes: 4096, Desc: "The note's text."}})
	tool := tools.NewTool(NamePutNote, d.WriteDesc("Set a note's text."), params,
		tools.WriteAnnotations("Put note", true), tools.OutputSchema[NoteWrite]())
	return tool, d.WriteHandler(NamePutNote, params, nil, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		res, err := svc.Put(ctx, w, a.Str("key"), a.Str("text"))
		d.Explain(&res.WriteResult)
		return res.WriteResult, res, err
	})
}

func getNote(d tools.Deps, svc Notes) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{keyParam}
	tool := tools.NewTool(NameGetNote, "Read a note.", params, tools.ReadAnnotations("Get note"), tools.OutputSchema[NoteRead]())
	return tool, d.ReadHandler(NameGetNote, params, nil, func(ctx context.Context, a tools.Args) (any, error) {
		return svc.Get(ctx, d.ReadOptions(ctx, Stream), a.Str("key"))
	})
}
