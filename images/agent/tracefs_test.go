package agent

import "testing"

// The 6.1 napi:napi_poll format, as tracefs prints it.
const napiPollFormat = `name: napi_poll
ID: 1234
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:struct napi_struct * napi;	offset:8;	size:8;	signed:0;
	field:__data_loc char[] dev_name;	offset:16;	size:4;	signed:1;
	field:int work;	offset:20;	size:4;	signed:1;
	field:int budget;	offset:24;	size:4;	signed:1;

print fmt: "napi poll on napi struct %p for device %s work %d budget %d", REC->napi, __get_str(dev_name), REC->work, REC->budget
`

func TestParseEventFormat(t *testing.T) {
	f, err := parseEventFormat(napiPollFormat)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]eventField{"napi": {8, 8}, "dev_name": {16, 4}, "work": {20, 4}, "budget": {24, 4}, "common_pid": {4, 4}}
	for name, w := range want {
		if f[name] != w {
			t.Errorf("%s = %+v, want %+v", name, f[name], w)
		}
	}
	if _, err := needFields("napi:napi_poll", f, "napi", "queue_mapping"); err == nil {
		t.Error("needFields found a field the event lacks")
	}
	if _, err := parseEventFormat("name: x\nformat:\n\tfield:int a;\toffset:x;\tsize:4;\n"); err == nil {
		t.Error("accepted a field without an offset")
	}
}
