package main

func (r *runner) finish(stopAt int64, events []FaultEvent, keys []KeyLeft) error {
	recs, err := readHistory(r.out + "/history")
	if err != nil {
		return err
	}
	println("records", len(recs), "events", len(events), "keys", len(keys))
	return nil
}
