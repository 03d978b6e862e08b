// pause holds a pod sandbox's namespaces open: it sleeps until SIGTERM or SIGINT, then exits 0.
// No registry is reachable here, so the sandbox image is built from this instead of pulled.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
