package main

import (
	"encoding/base64"
	"strings"
	"sync"

	"github.com/bytedance/sonic/ast"
	"github.com/valyala/fasthttp"
)

// maxPadded bounds ?size= and maxCached the number of padded patches kept.
const (
	maxPadded = 8 << 20
	maxCached = 64
)

// handler answers with a fixed review; the padded patches are built once
// per size.
type handler struct {
	mu      sync.RWMutex
	patches map[int][]byte // response size -> base64 patch
}

func newHandler() *handler { return &handler{patches: map[int][]byte{}} }

func (h *handler) serve(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		ctx.Error("POST only", fasthttp.StatusMethodNotAllowed)
		return
	}
	body := ctx.PostBody()
	// The searcher only reads; the string does not outlive this call.
	s := ast.NewSearcher(bytesString(body))
	apiVersion, err1 := nodeString(s, "apiVersion")
	uid, err2 := nodeString(s, "request", "uid")
	if err1 != nil || err2 != nil || uid == "" || !strings.HasPrefix(apiVersion, "admission.k8s.io/") {
		ctx.Error("not an AdmissionReview", fasthttp.StatusBadRequest)
		return
	}
	size := ctx.QueryArgs().GetUintOrZero("size")
	patch := h.patch(size, fixedLen(apiVersion, uid))
	ctx.SetContentType("application/json")
	out := ctx.Response.BodyWriter()
	w := func(s string) { _, _ = out.Write(stringBytes(s)) }
	w(`{"apiVersion":"`)
	w(apiVersion)
	w(`","kind":"AdmissionReview","response":{"uid":"`)
	w(uid)
	w(`","allowed":true`)
	if patch != nil {
		w(`,"patchType":"JSONPatch","patch":"`)
		_, _ = out.Write(patch)
		w(`"`)
	}
	w(`}}`)
}

func nodeString(s *ast.Searcher, path ...any) (string, error) {
	n, err := s.GetByPath(path...)
	if err != nil {
		return "", err
	}
	return n.String()
}

// fixedLen is the answer's length without a patch, and what a patch adds
// besides its own bytes.
func fixedLen(apiVersion, uid string) int {
	return len(`{"apiVersion":"","kind":"AdmissionReview","response":{"uid":"","allowed":true,"patchType":"JSONPatch","patch":""}}`) + len(apiVersion) + len(uid)
}

// patch returns a base64 JSON patch that pads the answer to size bytes, or
// nil if size leaves no room for one.
func (h *handler) patch(size, fixed int) []byte {
	size = min(size, maxPadded)
	b64 := size - fixed
	const shell = `[{"op":"add","path":"/floorPad","value":""}]`
	pad := b64*3/4 - len(shell)
	if pad <= 0 {
		return nil
	}
	h.mu.RLock()
	p, ok := h.patches[pad]
	h.mu.RUnlock()
	if ok {
		return p
	}
	raw := `[{"op":"add","path":"/floorPad","value":"` + strings.Repeat("x", pad) + `"}]`
	p = []byte(base64.StdEncoding.EncodeToString([]byte(raw)))
	h.mu.Lock()
	if len(h.patches) < maxCached {
		h.patches[pad] = p
	}
	h.mu.Unlock()
	return p
}
