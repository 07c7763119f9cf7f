"""Files the user changed between turns: the watcher and what it watches."""
