"""Series: recurring bookings, one reservation per occurrence of a rule (docs/series.md).

The app sits on top of capacity, as policy and usage do: it reads capacity through `capacity.port`
alone, and capacity never imports it. capacity's create still takes `repeat` and `allOrNothing` (its
one declaration of a request, capacity.placement.fields, holds the rule's bounds), and its API, booking
page, reservation page and `reserve` command hand a series to this app through
`capacity.series_hooks`, answered by series/hooks.py when the app is ready.

The `Series` model stays in capacity (capacity/models/series.py): each occurrence's Reservation points
to it, so moving it here would make capacity's migrations depend on this app.

    repeat.py       the rule: read, checked, expanded       book.py     booking a series (one transaction)
    occurrences.py  a series and its live occurrences        release.py  releasing its occurrences
    render.py       a series as the answers word it          port.py     another app books a tenant's series
    api.py, urls_api.py  the API;  views.py, urls.py  the pages;  command.py  `reserve --repeat`
"""
