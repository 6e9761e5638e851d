package tools

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/mark3labs/mcp-go/mcp"
)

// objectSchema is every tool's output schema: the answer is a JSON object.
var objectSchema = json.RawMessage(`{"type":"object"}`)

// OutputSchema declares that a tool answers structured content, a JSON
// object (T, the answer struct). It says no more than that, on purpose:
//   - a client needs the schema to know structured content comes and to
//     validate it (the official TypeScript SDK 1.x validates every
//     structuredContent against it); an object schema is what the MCP
//     specification requires of an output schema and what every answer
//     meets, and a refusal carries no structured content (result.go);
//   - a model reads the answer itself: the text content is the same object
//     as JSON, with its field names, and the tool descriptions name the
//     fields a caller acts on (the version for if_match, next_cursor, the
//     steps). The properties and their types, even cut to the top level,
//     were over a quarter of the seat catalogue's 5 000-token budget
//     (TestSeatCatalogue) and told a model nothing the answer does not.
//
// T must be a struct, so its JSON is an object; a tool built with another
// T is a programming error caught when the catalogue is built.
func OutputSchema[T any]() mcp.ToolOption {
	if k := reflect.TypeFor[T]().Kind(); k != reflect.Struct {
		panic(fmt.Sprintf("outputSchema: the answer type %v is a %v, not a struct; an answer must be a JSON object", reflect.TypeFor[T](), k))
	}
	return func(t *mcp.Tool) {
		t.RawOutputSchema = objectSchema
	}
}
