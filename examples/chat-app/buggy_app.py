"""The chat app with T8's bug: the UI loop adds every delta to "the current attempt".

After a Stop and a Retry, a delta the old attempt's reader had queued before the Stop
reaches the UI loop once the new attempt is current, and is shown as part of the new
answer.  ``tests/test_chat_app.py`` shows the audit catching it.
"""

from __future__ import annotations

from chat_app import Attempt, ChatApp, Turn


class BuggyChatApp(ChatApp):
    def attempt_of_delta(self, turn: Turn, number: int) -> Attempt:
        return turn.current
