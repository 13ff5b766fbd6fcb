package a2atasks

import (
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// validateTask refuses what a2a-go's in-memory store refuses (its validator is not
// exported): metadata holding values other than nil, bool, signed integers, floats,
// strings, []any and map[string]any, or a reference cycle, in the task, its status
// message, history, artifacts and their parts. The message texts are a2a-go's.
func validateTask(task *a2a.Task) error {
	if err := validateMessage(task.Status.Message); err != nil {
		return err
	}
	for _, m := range task.History {
		if err := validateMessage(m); err != nil {
			return err
		}
	}
	for _, a := range task.Artifacts {
		if a == nil {
			continue
		}
		if err := validateParts(a.Parts); err != nil {
			return err
		}
		if err := validateMeta(a.Metadata, map[string]struct{}{}); err != nil {
			return err
		}
	}
	return validateMeta(task.Metadata, map[string]struct{}{})
}

func validateMessage(m *a2a.Message) error {
	if m == nil {
		return nil
	}
	if err := validateParts(m.Parts); err != nil {
		return err
	}
	return validateMeta(m.Metadata, map[string]struct{}{})
}

func validateParts(parts a2a.ContentParts) error {
	for _, p := range parts {
		if err := validateMeta(p.Meta(), map[string]struct{}{}); err != nil {
			return err
		}
	}
	return nil
}

func validateMeta(value any, processing map[string]struct{}) error {
	switch value.(type) {
	case nil, bool, int, int8, int16, int32, int64, float32, float64, string:
		return nil
	}
	if m, ok := value.(map[string]any); ok && m == nil {
		return nil
	}
	key := fmt.Sprintf("%p", value)
	if _, ok := processing[key]; ok {
		return fmt.Errorf("circular reference in Metadata")
	}
	processing[key] = struct{}{}
	defer delete(processing, key)
	switch v := value.(type) {
	case []any:
		for _, e := range v {
			if err := validateMeta(e, processing); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		for _, e := range v {
			if err := validateMeta(e, processing); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%T is not permitted in Metadata, must be one of nil, bool, int, float, string, []any, map[string]any", value)
}
