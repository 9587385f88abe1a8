"""paging: with an honest relay, every pull or log page that says ``more`` advances
the cursor, so no device ever has to stop a read (docs/client.md, "Paging").

A device that meets such a page stops the sync run for that graph and emits
``sync.stopped`` with reason ``no-progress``; this invariant turns that event into
a violation naming the device, the route and the cursor.
"""

from simkit.invariants.base import Invariant


class Paging(Invariant):
    name = "paging"
    honest_only = True  # a malicious relay may stall a read; the device only must not hang
    observes = ("sync.stopped",)
    judges_events = True

    def observe(self, world, event):
        fields = event.fields
        if fields.get("reason") != "no-progress":
            return ()
        detail = (
            f"the relay returned a {fields['route']} page that did not advance the "
            f"cursor (after={fields['after']}, cursor {fields['cursor']}, more)"
        )
        return (
            self.violation(
                world,
                detail,
                trace_seq=event.seq,
                graph=fields.get("graph"),
                devices=(event.actor,),
            ),
        )
