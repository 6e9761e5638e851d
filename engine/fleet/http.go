package fleet

import (
	"encoding/json"
	"net/http"

	"github.com/crewlet/crewlet/engine"
)

// RetentionHandler serves GET /api/v1/retention: the retention answer as
// JSON, or a refusal with its code's status. Mount it behind the operator
// guard (token, Host and Origin checks).
func RetentionHandler(s *Status) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			w.WriteHeader(http.StatusMethodNotAllowed)
			_ = json.NewEncoder(w).Encode(engine.Refuse(engine.CodeInvalidArgument, "/api/v1/retention answers GET only.").Object())
			return
		}
		a, err := s.Answer(r.Context())
		if err != nil {
			ref, ok := engine.AsRefusal(err)
			if !ok {
				ref = engine.Refuse(engine.CodeInternal, "the retention answer failed: %v", err)
			}
			w.WriteHeader(engine.HTTPStatus(ref.Code))
			_ = json.NewEncoder(w).Encode(ref.Object())
			return
		}
		_ = json.NewEncoder(w).Encode(a)
	})
}
