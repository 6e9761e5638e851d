package tools

// What every tool's definition is made of: its annotations, its
// description's ending and op_id argument on the surfaces that take one,
// and the definition assembled from its parts.

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
)

// ArgOpID is the argument a write brings its operation id back in.
const ArgOpID = "op_id"

// outcomeSentence ends every write description on the operator surface.
const outcomeSentence = " The answer's outcome is applied (done here; position is where it landed), pending (durable in the log but not yet applied on this node: do not retry, it applies on its own) or unknown (the write may or may not have landed: call again with the same arguments and the answer's op_id)."

// OpIDParam is the op_id argument of a write on the surfaces that take
// one (WithOpID).
var OpIDParam = Param{
	Name:     ArgOpID,
	Kind:     KindString,
	MaxBytes: 256,
	Desc:     "Optional. Leave it out for a new write, or mint a fresh v7 UUID yourself just before the first attempt so a lost answer can be retried; to repeat a write, send the same op_id with exactly the same arguments (with any others it is refused op_reused) and it happens at most once.",
}

// ReadAnnotations are a read's annotations, all four hints set on every
// tool: mcp.NewTool defaults to destructive and open-world, which is wrong
// for every tool here.
func ReadAnnotations(title string) []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithTitleAnnotation(title),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		// The node is the server's own closed world, not the internet.
		mcp.WithOpenWorldHintAnnotation(false),
	}
}

// WriteAnnotations are a write's annotations: not destructive (a tool
// that is adds mcp.WithDestructiveHintAnnotation(true) after them).
func WriteAnnotations(title string, idempotent bool) []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithTitleAnnotation(title),
		mcp.WithReadOnlyHintAnnotation(false),
		// None of these writes destroys anything; trash and purge (later
		// tools) are the destructive ones.
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(idempotent),
		mcp.WithOpenWorldHintAnnotation(false),
	}
}

// NewTool assembles a definition from its parts.
func NewTool(name, desc string, params []Param, annotations []mcp.ToolOption, output mcp.ToolOption) mcp.Tool {
	opts := []mcp.ToolOption{mcp.WithDescription(desc)}
	opts = append(opts, schemaOptions(params)...)
	opts = append(opts, annotations...)
	opts = append(opts, output)
	return mcp.NewTool(name, opts...)
}

// WithOpID is params with op_id on the surfaces where writes take one.
func (d Deps) WithOpID(params []Param) []Param {
	if !d.TakesOpID() {
		return params
	}
	return append(params, OpIDParam)
}

// WriteDesc is a write's description, ended where writes take an op_id
// with what to do with each outcome.
func (d Deps) WriteDesc(desc string) string {
	if !d.TakesOpID() {
		return desc
	}
	return desc + outcomeSentence
}

// OpOf is the operation a failed write ran under: the one the service
// answered, else the one the caller brought.
func OpOf(res engine.WriteResult, w engine.WriteOptions) string {
	if res.OpID != "" {
		return res.OpID
	}
	return w.OpID
}

// MaxKeyBytes is the longest short key (a project's ENG, a space's DOCS).
const MaxKeyBytes = 10

// ValidKey reports whether s is a short key: 2 to 10 upper-case letters
// and digits starting with a letter, as projects and spaces are keyed.
func ValidKey(s string) bool {
	if len(s) < 2 || len(s) > MaxKeyBytes || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
