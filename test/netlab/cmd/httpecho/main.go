// Command httpecho is the backend of Herald's traffic tests and demo: an
// HTTP server, run in a "pod" network namespace, that answers every request
// with its name, the address the connection reached and the address it came
// from. The last one shows whether the client's source address survived
// the way through kube-proxy (externalTrafficPolicy: Local keeps it).
//
//	httpecho -listen :8080 -name pod-node1
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
)

func main() {
	listen := flag.String("listen", ":8080", "address to listen on")
	name := flag.String("name", "httpecho", "name to answer with")
	flag.Parse()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		local := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		fmt.Fprintf(w, "%s: %s from %s\n", *name, local, r.RemoteAddr)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
