package images

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"strings"
	"testing"
)

// containerfileImage is what the final stage of a Containerfile puts into
// its image, as far as this package mirrors it.
type containerfileImage struct {
	// Files are the paths the stage's COPY instructions create.
	Files []string
	// Entrypoint is the stage's ENTRYPOINT (JSON form).
	Entrypoint []string
}

// instruction is one Containerfile instruction, continuation lines joined.
type instruction struct {
	Line int    // where it starts
	Cmd  string // upper case: FROM, COPY, ...
	Args string
}

// parseContainerfile reads the final stage (after the last FROM) of a
// Containerfile. It understands only what BuildHerald mirrors, COPY and
// ENTRYPOINT, and fails on any other instruction or COPY flag there
// (USER, ENV, WORKDIR, --chmod, ...): such a change of the published image
// must be mirrored by BuildHerald and checked here, not passed over.
func parseContainerfile(text string) (containerfileImage, error) {
	ins, err := instructions(text)
	if err != nil {
		return containerfileImage{}, err
	}
	last := -1
	for i, in := range ins {
		if in.Cmd == "FROM" {
			last = i
		}
	}
	if last < 0 {
		return containerfileImage{}, fmt.Errorf("no FROM")
	}
	var img containerfileImage
	var entrypoint bool
	for _, in := range ins[last+1:] {
		switch in.Cmd {
		case "COPY":
			files, err := copyDestinations(in.Args)
			if err != nil {
				return containerfileImage{}, fmt.Errorf("line %d: COPY: %w", in.Line, err)
			}
			img.Files = append(img.Files, files...)
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(in.Args), &img.Entrypoint); err != nil {
				return containerfileImage{}, fmt.Errorf("line %d: ENTRYPOINT not in JSON form: %w", in.Line, err)
			}
			entrypoint = true
		default:
			return containerfileImage{}, fmt.Errorf("line %d: %s in the final stage: not mirrored by package images", in.Line, in.Cmd)
		}
	}
	if !entrypoint {
		return containerfileImage{}, fmt.Errorf("no ENTRYPOINT in the final stage")
	}
	return img, nil
}

// instructions splits a Containerfile into instructions: comment lines
// (# first) and empty lines dropped, also inside a continued instruction,
// as the builders do; a trailing backslash continues on the next line (the
// default escape character).
func instructions(text string) ([]instruction, error) {
	var out []instruction
	var cur *instruction
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		more := strings.HasSuffix(trimmed, `\`)
		trimmed = strings.TrimSpace(strings.TrimSuffix(trimmed, `\`))
		if cur == nil {
			cmd, args, _ := strings.Cut(trimmed, " ")
			cur = &instruction{Line: i + 1, Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args)}
		} else {
			cur.Args = strings.TrimSpace(cur.Args + " " + trimmed)
		}
		if !more {
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: %s continued past the end", cur.Line, cur.Cmd)
	}
	return out, nil
}

// copyDestinations returns the paths a COPY creates: with several sources
// or a destination ending in a slash, each source's base name in the
// destination directory; else the destination itself.
func copyDestinations(args string) ([]string, error) {
	fields := strings.Fields(args)
	for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
		flag, _, _ := strings.Cut(fields[0], "=")
		switch flag {
		case "--from", "--link": // where from, how stored: not what lands
		default:
			return nil, fmt.Errorf("flag %s not mirrored by package images", flag)
		}
		fields = fields[1:]
	}
	rest := strings.Join(fields, " ")
	if strings.HasPrefix(rest, "[") {
		fields = nil
		if err := json.Unmarshal([]byte(rest), &fields); err != nil {
			return nil, fmt.Errorf("JSON form: %w", err)
		}
	}
	if len(fields) < 2 {
		return nil, fmt.Errorf("%q: no source or no destination", args)
	}
	srcs, dst := fields[:len(fields)-1], fields[len(fields)-1]
	if !path.IsAbs(dst) {
		return nil, fmt.Errorf("destination %q is not absolute", dst)
	}
	var files []string
	for _, src := range srcs {
		if strings.ContainsAny(src, "*?[") {
			return nil, fmt.Errorf("source %q: wildcards not supported", src)
		}
		if len(srcs) > 1 || strings.HasSuffix(dst, "/") {
			files = append(files, path.Join(dst, path.Base(src)))
		} else {
			files = append(files, path.Clean(dst))
		}
	}
	return files, nil
}

func TestParseContainerfile(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want containerfileImage
		err  string // part of the error; "" for none
	}{{
		name: "two stages, comments, continuations",
		text: `# syntax=docker/dockerfile:1
ARG GO_VERSION=1.25
FROM golang:${GO_VERSION} AS builder
WORKDIR /src
COPY . .
RUN go build -o /out/ \
    ./cmd/a ./cmd/b

# the image
FROM gcr.io/distroless/static-debian12:latest
COPY --from=builder /out/a /out/b /usr/bin/
ENTRYPOINT ["/usr/bin/a"]
`,
		want: containerfileImage{Files: []string{"/usr/bin/a", "/usr/bin/b"}, Entrypoint: []string{"/usr/bin/a"}},
	}, {
		name: "several COPYs, one continued over a comment and an empty line, lower case",
		text: `FROM x AS builder
from scratch
copy --from=builder /out/a /usr/bin/
COPY --link --from=builder \
  # a comment inside

  /out/b \
  /out/c /usr/local/bin/
COPY ["/out/d", "/opt/"]
entrypoint ["/usr/bin/a", "--flag"]
`,
		want: containerfileImage{
			Files:      []string{"/usr/bin/a", "/usr/local/bin/b", "/usr/local/bin/c", "/opt/d"},
			Entrypoint: []string{"/usr/bin/a", "--flag"},
		},
	}, {
		name: "one source to a file name",
		text: "FROM scratch\nCOPY --from=b /out/herald-agent /agent\nENTRYPOINT [\"/agent\"]\n",
		want: containerfileImage{Files: []string{"/agent"}, Entrypoint: []string{"/agent"}},
	}, {
		name: "the last ENTRYPOINT counts",
		text: "FROM scratch\nENTRYPOINT [\"/a\"]\nENTRYPOINT [\"/b\"]\n",
		want: containerfileImage{Entrypoint: []string{"/b"}},
	}, {
		name: "shell form ENTRYPOINT",
		text: "FROM scratch\nENTRYPOINT /usr/bin/a\n",
		err:  "ENTRYPOINT not in JSON form",
	}, {
		name: "no ENTRYPOINT in the final stage",
		text: "FROM x\nENTRYPOINT [\"/a\"]\nFROM scratch\nCOPY --from=0 /a /usr/bin/\n",
		err:  "no ENTRYPOINT",
	}, {
		name: "instruction not mirrored",
		text: "FROM scratch\nUSER 65532\nENTRYPOINT [\"/a\"]\n",
		err:  "USER in the final stage",
	}, {
		name: "COPY flag not mirrored",
		text: "FROM scratch\nCOPY --chmod=0700 --from=b /a /usr/bin/\nENTRYPOINT [\"/a\"]\n",
		err:  "flag --chmod",
	}, {
		name: "wildcard",
		text: "FROM scratch\nCOPY --from=b /out/* /usr/bin/\nENTRYPOINT [\"/a\"]\n",
		err:  "wildcards",
	}, {
		name: "relative destination",
		text: "FROM scratch\nCOPY --from=b /out/a bin/\nENTRYPOINT [\"/a\"]\n",
		err:  "not absolute",
	}, {
		name: "no FROM",
		text: "ENTRYPOINT [\"/a\"]\n",
		err:  "no FROM",
	}, {
		name: "continued past the end",
		text: "FROM scratch\nENTRYPOINT [\"/a\"] \\\n",
		err:  "continued past the end",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseContainerfile(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
