package manifest

import "bytes"

// splitYAMLText cuts multi-document YAML into each document's original
// text, so documents graft leaves alone are written back byte for byte (no
// YAML encoder re-quoting them). It follows the decoder: a line starting
// with "---" begins a document and belongs to it; comments before the
// first marker belong to the first document; a stream that is only
// comments holds none. Callers use the texts only when their count matches
// the decoder's.
func splitYAMLText(data []byte) [][]byte {
	var chunks [][]byte
	start := 0
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		if isDocumentMarker(data[off:next]) && off > start {
			chunks = append(chunks, data[start:off])
			start = off
		}
		off = next
	}
	if start < len(data) {
		chunks = append(chunks, data[start:])
	}
	// Leading comments and blank lines join the first document.
	if len(chunks) > 0 && onlyComments(chunks[0]) && !isDocumentMarker(chunks[0]) {
		if len(chunks) == 1 {
			return nil
		}
		merged := make([]byte, 0, len(chunks[0])+len(chunks[1]))
		merged = append(append(merged, chunks[0]...), chunks[1]...)
		chunks = append([][]byte{merged}, chunks[2:]...)
	}
	return chunks
}

func isDocumentMarker(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	return len(line) == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\n' || line[3] == '\r'
}

func onlyComments(chunk []byte) bool {
	for _, line := range bytes.Split(chunk, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return false
		}
	}
	return true
}
