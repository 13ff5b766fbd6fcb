package middleware

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// refFold is the fold as encoding/json alone made it (before the walk): FuzzFold
// holds taskFold to it. It shares taskFold's state and decisions (of, whole, task,
// mergeArtifact) and reads every event with json.Unmarshal, so the fuzz target checks
// the reading.
type refFold struct{ taskFold }

// add folds the members of one event of size bytes.
func (f *refFold) add(v streamMembers, size int) {
	if f.size += size; f.size > maxAnswerCopy {
		f.tooBig = true
	}
	switch {
	case f.tooBig:
	case !isNull(v.Task):
		var m map[string]json.RawMessage
		if id := objectID(v.Task, "id"); id != "" && json.Unmarshal(v.Task, &m) == nil {
			f.taskID, f.fields = id, m
		}
	case !isNull(v.Message):
		f.reply = v.Message
	case !isNull(v.StatusUpdate):
		f.statusUpdate(v.StatusUpdate)
	case !isNull(v.ArtifactUpdate):
		f.artifactUpdate(v.ArtifactUpdate)
	}
}

func (f *refFold) statusUpdate(raw json.RawMessage) {
	var u struct {
		updateHead
		Status json.RawMessage `json:"status"`
	}
	if json.Unmarshal(raw, &u) != nil || !f.of(u.updateHead) {
		return
	}
	var cur struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(f.fields["status"], &cur) == nil && !isNull(cur.Message) {
		var history []json.RawMessage
		_ = json.Unmarshal(f.fields["history"], &history)
		f.fields["history"], _ = json.Marshal(append(history, cur.Message))
	}
	if len(u.Metadata) > 0 {
		f.fields["metadata"] = mergeMembers(f.fields["metadata"], u.Metadata)
	}
	if !isNull(u.Status) {
		f.fields["status"] = u.Status
	}
}

func (f *refFold) artifactUpdate(raw json.RawMessage) {
	var u struct {
		updateHead
		Append   bool            `json:"append"`
		Artifact json.RawMessage `json:"artifact"`
	}
	if json.Unmarshal(raw, &u) != nil || isNull(u.Artifact) || !f.of(u.updateHead) {
		return
	}
	mergeArtifact(f.fields, u.Artifact, u.Append)
}

// FuzzFold feeds the same events, split from the input at new lines, to taskFold
// and to refFold, and requires the same task, reply and task id.
func FuzzFold(f *testing.F) {
	task := `{"task":{"id":"t1","contextId":"c1","history":[{"messageId":"m1","parts":[{"text":"hello"}],"role":"ROLE_USER"}],"status":{"state":"TASK_STATE_SUBMITTED","message":{"messageId":"s0"}}}}`
	working := `{"statusUpdate":{"contextId":"c1","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-04T17:25:19.768342469Z"},"taskId":"t1"}}`
	art := `{"artifactUpdate":{"artifact":{"artifactId":"a1","parts":[{"text":"echo: hello"}]},"contextId":"c1","taskId":"t1"}}`
	done := `{"statusUpdate":{"contextId":"c1","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"s1","parts":[{"text":"<done> & \u2028"}]}},"taskId":"t1","metadata":{"k":1}}}`
	for _, seed := range []string{
		strings.Join([]string{task, working, art, done}, "\n"),
		strings.Join([]string{working, art, art, done}, "\n"),
		strings.Join([]string{task, art, `{"artifactUpdate":{"append":true,"artifact":{"artifactId":"a1","parts":[{"text":"more"}],"metadata":{"x":"y"}},"taskId":"t1"}}`}, "\n"),
		strings.Join([]string{task, `{"statusUpdate":{"TaskId":"t1","status":{"state":"X"},"taskId":"t1","metadata":{"a":1},"metadata":{"b":2}}}`}, "\n"),
		strings.Join([]string{`{"task":{"id":"t\u0031","history":{},"status":{"Message":{"a":1}},"\u0069d":"t2"}}`, `{"statusUpdate":{"taskId":"t2","metadata":null,"status":null}}`, `{"artifactUpdate":{"taskId":"t2","append":1,"artifact":{"artifactId":"a"}}}`, `{"artifactUpdate":{"taskId":"t2","artifact":{"artifactId":7}}}`}, "\n"),
		strings.Join([]string{task, `{"statusUpdate":{"taskId":"t1","status":{"message":null}}}`, `{"statusUpdate":{"taskId":"t1","status":"x"}}`, `{"message":{"messageId":"r"}}`}, "\n"),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var got taskFold
		var want refFold
		for ev := range bytes.SplitSeq(in, []byte("\n")) {
			v, ok := readStreamMembers(ev)
			if !ok {
				continue
			}
			got.add(v, len(ev))
			want.add(v, len(ev))
		}
		if got.taskID != want.taskID || !bytes.Equal(got.reply, want.reply) || got.whole() != want.whole() {
			t.Fatalf("fold: id %q reply %s whole %v; encoding/json: id %q reply %s whole %v",
				got.taskID, got.reply, got.whole(), want.taskID, want.reply, want.whole())
		}
		if got.whole() && !bytes.Equal(got.task(), want.task()) {
			t.Fatalf("fold:\n%s\nencoding/json:\n%s", got.task(), want.task())
		}
	})
}
