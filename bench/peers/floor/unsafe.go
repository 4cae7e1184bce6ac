package main

import "unsafe"

// Every use of package unsafe in the floor is in this file.

// bytesString views b as a string without copying. Sound because the
// searcher only reads, and the string does not outlive the handler's
// call, during which nothing writes to the request body.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// stringBytes views s as bytes without copying, for a Write that only
// reads them (the response body writer copies what it is given). Never
// hand them to anything that writes: s may be a constant, whose bytes
// are read-only memory.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
