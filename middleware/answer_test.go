package middleware

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

// The readers of answers before they walked validated JSON with member.Members:
// nested json.Unmarshal calls. The readers must read every input as these did.

func refReadResponse(data []byte) (json.RawMessage, *failure) {
	var resp rpcResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, nil
	}
	if !isNull(resp.Error) {
		var e struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(resp.Error, &e)
		return nil, &failure{kind: failRelayed, status: http.StatusOK, raw: resp.Error, refuses: rpcRefuses(e.Code)}
	}
	return resp.Result, nil
}

// refStreamMembers reads raw as a response by encoding/json, but a JSON null, with
// white space around it or not, is no response (as readStreamMembers has it).
func refStreamMembers(raw json.RawMessage) (streamMembers, bool) {
	var v streamMembers
	if isNull(bytes.TrimSpace(raw)) || json.Unmarshal(raw, &v) != nil {
		return streamMembers{}, false
	}
	return v, true
}

func refObjectID(raw json.RawMessage, name string) string {
	if name == "taskId" {
		var u struct {
			TaskID string `json:"taskId"`
		}
		if json.Unmarshal(raw, &u) != nil {
			return ""
		}
		return u.TaskID
	}
	var t struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return ""
	}
	return t.ID
}

func refAnswer(v streamMembers) Produced {
	switch {
	case !isNull(v.Task):
		if id := refObjectID(v.Task, "id"); id != "" {
			return Produced{TaskID: id}
		}
	case !isNull(v.Message):
		if v.Message[0] == '{' {
			return Produced{Reply: v.Message}
		}
	case !isNull(v.StatusUpdate):
		if id := refObjectID(v.StatusUpdate, "taskId"); id != "" {
			return Produced{TaskID: id, update: true}
		}
	case !isNull(v.ArtifactUpdate):
		if id := refObjectID(v.ArtifactUpdate, "taskId"); id != "" {
			return Produced{TaskID: id, update: true}
		}
	}
	return Produced{}
}

func refTask(v streamMembers) ([]byte, bool) {
	if isNull(v.Task) || refObjectID(v.Task, "id") == "" {
		return nil, false
	}
	return v.Task, true
}

func refStreamAnswer(raw []byte) Produced {
	v, ok := refStreamMembers(raw)
	if !ok {
		return Produced{}
	}
	return refAnswer(v)
}

func refStreamTask(raw []byte) ([]byte, bool) {
	v, ok := refStreamMembers(raw)
	if !ok {
		return nil, false
	}
	return refTask(v)
}

func refRPCAnswer(data []byte) Produced {
	result, fail := refReadResponse(data)
	if fail != nil {
		return Produced{Refused: fail.refuses, fail: fail}
	}
	return refStreamAnswer(result)
}

func refRPCTask(data []byte) ([]byte, bool) {
	result, fail := refReadResponse(data)
	if fail != nil {
		return nil, false
	}
	return refStreamTask(result)
}

func refRPCTaskAnswer(status int, body []byte) ([]byte, *failure) {
	var resp rpcResponse
	if status != http.StatusOK || json.Unmarshal(body, &resp) != nil {
		return nil, taskUnreadable(status)
	}
	if !isNull(resp.Error) {
		var e struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(resp.Error, &e)
		return nil, &failure{kind: failRelayed, status: http.StatusOK, raw: resp.Error, taskNotFound: e.Code == codeTaskNotFound}
	}
	if isNull(resp.Result) {
		return nil, taskMissing()
	}
	return resp.Result, nil
}

// checkAnswerReading holds every reader of answers to its reference on data.
func checkAnswerReading(t *testing.T, data []byte) {
	t.Helper()
	same := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s of %q:\n got  %#v\n want %#v", what, data, got, want)
		}
	}
	type taskResult struct {
		Task []byte
		OK   bool
	}
	same("JSON-RPC eventAnswer", jsonrpc10{}.eventAnswer(data), refRPCAnswer(data))
	task, ok := jsonrpc10{}.eventTask(data)
	rtask, rok := refRPCTask(data)
	same("JSON-RPC eventTask", taskResult{task, ok}, taskResult{rtask, rok})
	same("HTTP+JSON sendAnswer", rest10{}.sendAnswer(http.StatusOK, data), refStreamAnswer(data))
	task, ok = rest10{}.eventTask(data)
	rtask, rok = refStreamTask(data)
	same("HTTP+JSON eventTask", taskResult{task, ok}, taskResult{rtask, rok})
	type answer struct {
		Task []byte
		Fail *failure
	}
	a, f := rpcTaskAnswer(http.StatusOK, data)
	ra, rf := refRPCTaskAnswer(http.StatusOK, data)
	same("JSON-RPC taskAnswer", answer{a, f}, answer{ra, rf})
	v, ok := readStreamMembers(data)
	rv, rok := refStreamMembers(data)
	same("readStreamMembers", struct {
		V  streamMembers
		OK bool
	}{v, ok}, struct {
		V  streamMembers
		OK bool
	}{rv, rok})
	if valid := json.Valid(data); valid {
		for _, name := range []string{"id", "taskId"} {
			same("objectID "+name, objectID(data, name), refObjectID(data, name))
		}
	}
}

var answerSeeds = []string{
	`{"jsonrpc":"2.0","id":"1","result":{"task":{"id":"t-1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","status":{}}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"t","artifact":{}}}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"task not found"}}`,
	`{"jsonrpc":"2.0","id":1,"error":null,"result":{"task":{"id":"t"}}}`,
	`{"jsonrpc":"2.0","id":1,"Result":{"TASK":{"ID":"t"}},"RESULT":null}`,
	`{"result":{"task":{"id":"a","id":null}}}`,
	`{"result":{"task":{"id":"a","id":7}}}`,
	`{"result":{"task":{"\u0131d":"dotless"},"task":{"iD":"b"}}}`,
	`{"result":{"statusUpdate":{"tas\u212Aid":"kelvin"}}}`,
	`{"result":{"task":null,"message":"not an object"}}`,
	`{"result":{"message":["x"]}}`,
	`{"result":[1]}`,
	`{"result":null}`,
	`null`,
	` null`,
	"\tnull \n",
	` {"task":{"id":"t","history":[{"parts":[{"text":"\"}{"}]}]}} `,
	`{"task":{"id":"t"}}{"trailing":1}`,
	`{"error":{"code":404,"status":"NOT_FOUND"}}`,
	`{"task":{"id":""},"message":{"messageId":"m"}}`,
	`[]`,
	`"x"`,
	`{"task":`,
}

func TestAnswerReadingMatchesNestedDecodes(t *testing.T) {
	for _, s := range answerSeeds {
		checkAnswerReading(t, []byte(s))
	}
}

// FuzzAnswerReading holds the readers of answers to nested json.Unmarshal calls on
// any input.
func FuzzAnswerReading(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.Count(data, []byte("{")) > 64 {
			return
		}
		checkAnswerReading(t, data)
	})
}
