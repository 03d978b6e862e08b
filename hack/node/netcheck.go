// netcheck is a tiny HTTP server for proving a real node's networking from outside the pod, without
// exec or logs: GET / answers with the pod's hostname, GET /resolve?name=N resolves N with the pod's own
// /etc/resolv.conf (Go's pure resolver, so cluster DNS and its search path are what is being tested), and
// GET /fetch?url=U fetches U from inside the pod (pod to Service traffic through kube-proxy).
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	addr := ":8080"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	host, _ := os.Hostname()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Only "/" itself: an unknown path must not look like an answer (built in GOPATH mode, so the
		// Go 1.22 "/{$}" pattern is not available).
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, host)
	})
	http.HandleFunc("/resolve", func(w http.ResponseWriter, r *http.Request) {
		addrs, err := net.DefaultResolver.LookupHost(r.Context(), r.URL.Query().Get("name"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprintln(w, strings.Join(addrs, " "))
	})
	client := &http.Client{Timeout: 5 * time.Second}
	http.HandleFunc("/fetch", func(w http.ResponseWriter, r *http.Request) {
		resp, err := client.Get(r.URL.Query().Get("url"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		fmt.Fprintf(w, "%s fetched: ", host)
		io.Copy(w, io.LimitReader(resp.Body, 1<<16))
	})
	if err := http.ListenAndServe(addr, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
