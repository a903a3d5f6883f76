// Command httpecho is the backend of Herald's traffic tests and demo: an
// HTTP server, run in a "pod" network namespace, that answers every request
// with its name, the address the connection reached and the address it came
// from. The last one shows whether the client's source address survived
// the way through kube-proxy (externalTrafficPolicy: Local keeps it).
//
//	httpecho -listen :8080 -name pod-node1
//
// With -get it is the client instead: it fetches one URL, prints the answer
// and exits non-zero if there is none. The real-cluster tests run it with
// kubectl exec in one pod to reach another (the image has no shell and no
// curl).
//
//	httpecho -get http://198.18.24.17:8080/
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", ":8080", "address to listen on")
	name := flag.String("name", "httpecho", "name to answer with")
	get := flag.String("get", "", "fetch this URL, print the answer and exit")
	timeout := flag.Duration("timeout", 5*time.Second, "with -get: how long to wait for the answer")
	flag.Parse()
	if *get != "" {
		os.Exit(fetch(*get, *timeout))
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		local := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		fmt.Fprintf(w, "%s: %s from %s\n", *name, local, r.RemoteAddr)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}

func fetch(url string, timeout time.Duration) int {
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	if _, err := io.Copy(os.Stdout, resp.Body); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, resp.Status)
		return 1
	}
	return 0
}
