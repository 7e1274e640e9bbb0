package agent

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// tracefsDir is where the agent mounts tracefs (cilium/ebpf looks there first).
const tracefsDir = "/sys/kernel/tracing"

// eventField is one field of a trace event record.
type eventField struct {
	offset, size int
}

// eventFormat parses tracefs events/<group>/<name>/format into field name ->
// offset and size. A __data_loc field keeps its 4-byte descriptor's place.
func eventFormat(group, name string) (map[string]eventField, error) {
	path := fmt.Sprintf("%s/events/%s/%s/format", tracefsDir, group, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read the %s:%s event format (kernel without tracing?): %w", group, name, err)
	}
	return parseEventFormat(string(b))
}

// parseEventFormat reads lines such as
// "field:unsigned int vec;	offset:8;	size:4;	signed:0;".
func parseEventFormat(text string) (map[string]eventField, error) {
	fields := map[string]eventField{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		var decl string
		f := eventField{offset: -1, size: -1}
		for _, part := range strings.Split(line, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
			if !ok {
				continue
			}
			switch k {
			case "field":
				decl = v
			case "offset":
				if n, err := strconv.Atoi(v); err == nil {
					f.offset = n
				}
			case "size":
				if n, err := strconv.Atoi(v); err == nil {
					f.size = n
				}
			}
		}
		words := strings.Fields(decl)
		if len(words) == 0 || f.offset < 0 || f.size <= 0 {
			return nil, fmt.Errorf("bad event format line %q", line)
		}
		name := words[len(words)-1]
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		fields[strings.TrimPrefix(name, "*")] = f
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("event format without fields")
	}
	return fields, nil
}

// needFields returns the named fields or an error naming the missing ones.
func needFields(event string, fields map[string]eventField, names ...string) ([]eventField, error) {
	var out []eventField
	var missing []string
	for _, n := range names {
		f, ok := fields[n]
		if !ok {
			missing = append(missing, n)
		}
		out = append(out, f)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("event %s has no field %s", event, strings.Join(missing, ", "))
	}
	return out, nil
}
