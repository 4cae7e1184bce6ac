// Command pause is the Pod sandbox's process on the harness's real nodes
// (containerd's sandbox_image): it holds the Pod's namespaces until it is
// told to stop.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
