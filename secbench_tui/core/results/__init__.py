"""What the results say: scoring replies, metrics, run summaries, the HTML report and exports."""
