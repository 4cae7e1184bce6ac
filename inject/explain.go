package inject

import "encoding/json"

// Explanation is what `graft explain` shows: the decision and everything
// that led to it.
type Explanation struct {
	Result Result
	// Selection says which revision served and how it was chosen (set by
	// Revisions.Explain).
	Selection Selection
	Profile   string
	Templates []string
	Params    []ParamValue
	Warnings  []string
	// Message is the deny message, if denied.
	Message string
	// Patch is the RFC 6902 patch (JSON), if any.
	Patch []byte
	// Response is the whole AdmissionReview response.
	Response []byte
}

// ParamValue is one template parameter's effective value and its source.
type ParamValue struct {
	Template string
	Param    string
	Value    string
	// Source is "default", "profile" or "annotation".
	Source string
}

func responseWarnings(resp []byte) []string {
	var r struct {
		Response struct {
			Warnings []string `json:"warnings"`
		} `json:"response"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return nil
	}
	return r.Response.Warnings
}
