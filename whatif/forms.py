"""The What-if page's form: the `simulate` command's inputs, with each refusal next to its field."""

from __future__ import annotations

from datetime import UTC, datetime, time

from django import forms

from capacity.port import CapacityError

from .changes import Changes
from .demand import Synthetic
from .shares import parse_shares
from .simulation import Inputs, parse_add, parse_mix, parse_weights

# A refusal's message starts with the option it is about: the field that shows it.
FIELD_OF_OPTION = {
    "--synthetic": "requests",
    "--rate": "rate",
    "--mix": "mix",
    "--gang-share": "gang_share",
    "--spot-share": "spot_share",
    "--from/--to": "since",
    "--to": "until",
    "--from": "since",
    "--add-nodes": "add_nodes",
    "--remove-nodes": "remove_nodes",
    "--restore-nodes": "restore_nodes",
    "--weights": "weights",
    "--top-n": "top_n",
    "--placer": "placer",
    "--horizon-days": "horizon_days",
    "--shares": "shares",
}

_small = {"class": "short"}


class WhatIfForm(forms.Form):
    """What to replay and what to change."""

    demand = forms.ChoiceField(
        choices=[
            ("synthetic", "Synthetic demand"),
            ("recorded", "Recorded: reservations created in a period"),
        ],
        initial="synthetic",
        widget=forms.RadioSelect,
    )
    requests = forms.IntegerField(
        initial=2000, min_value=1, required=False, label="Requests", widget=forms.NumberInput(_small)
    )
    seed = forms.IntegerField(initial=1, label="Seed", widget=forms.NumberInput(_small))
    rate = forms.FloatField(
        initial=20.0, label="Arrivals per hour", required=False, widget=forms.NumberInput(_small)
    )
    mix = forms.CharField(initial="1:40,2:25,4:20,8:15", label="Sizes (GPUs:share)", required=False)
    gang_share = forms.FloatField(
        initial=0.05, label="Gang share", required=False, widget=forms.NumberInput(_small)
    )
    mean_hours = forms.FloatField(
        initial=6.0, label="Mean hours", required=False, widget=forms.NumberInput(_small)
    )
    spot_share = forms.FloatField(
        initial=0.1, label="Spot share", required=False, widget=forms.NumberInput(_small)
    )
    since = forms.DateField(
        required=False, label="From (UTC)", widget=forms.DateInput(attrs={"placeholder": "YYYY-MM-DD"})
    )
    until = forms.DateField(
        required=False,
        label="To (UTC, not included)",
        widget=forms.DateInput(attrs={"placeholder": "YYYY-MM-DD"}),
    )
    add_nodes = forms.CharField(
        required=False,
        label="Add nodes",
        help_text="copies of a node: ams1-dgx-01=16, …",
        widget=forms.TextInput(attrs={"placeholder": "node=count, …", "size": 30}),
    )
    remove_nodes = forms.CharField(
        required=False,
        label="Take out nodes",
        help_text="names or label=value, comma-separated",
        widget=forms.TextInput(attrs={"placeholder": "ams1-dgx-05, rack=a01", "size": 30}),
    )
    restore_nodes = forms.CharField(
        required=False,
        label="Bring back nodes",
        help_text="cordoned, in maintenance…: names or label=value",
        widget=forms.TextInput(attrs={"placeholder": "ams1-dgx-03, ams1-dgx-07", "size": 30}),
    )
    weights = forms.CharField(
        required=False,
        label="Scorer weights",
        widget=forms.TextInput(attrs={"placeholder": "binpack=2, spread=0"}),
    )
    shares = forms.CharField(
        required=False,
        label="Shares (GPUs)",
        help_text="tenant=guaranteed[:borrowing limit[:lending limit]], comma-separated; empty: the pool's",
        widget=forms.TextInput(attrs={"placeholder": "acme=96, globex=48:24:0", "size": 30}),
    )
    top_n = forms.IntegerField(required=False, label="Top N", widget=forms.NumberInput(_small))
    placer = forms.ChoiceField(
        required=False, choices=[("", "as configured"), ("inline", "inline"), ("pool-lease", "pool-lease")]
    )
    horizon_days = forms.IntegerField(initial=14, label="Longest wait (days)", widget=forms.NumberInput(_small))  # fmt: skip

    def __init__(self, *args, pool: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.pool = pool

    def inputs(self) -> Inputs | None:
        """Return the run's inputs, or None with each refusal next to its field."""
        if not self.is_valid():
            return None
        data = self.cleaned_data
        try:
            recorded = data["demand"] == "recorded"
            if not recorded and data["requests"] is None:
                raise CapacityError("INVALID_INPUT", "--synthetic: how many requests to draw")
            if recorded and (data["since"] is None or data["until"] is None):
                raise CapacityError("INVALID_INPUT", "--from/--to: give both days")
            synthetic = None
            if not recorded:
                synthetic = Synthetic(
                    count=data["requests"],
                    seed=data["seed"],
                    per_hour=data["rate"] if data["rate"] is not None else 20.0,
                    mix=parse_mix(data["mix"] or "1:40,2:25,4:20,8:15"),
                    gang_share=data["gang_share"] if data["gang_share"] is not None else 0.05,
                    mean_hours=data["mean_hours"] if data["mean_hours"] is not None else 6.0,
                    spot_share=data["spot_share"] if data["spot_share"] is not None else 0.1,
                )
            return Inputs(
                pool=self.pool,
                since=_day(data["since"]) if recorded else None,
                until=_day(data["until"]) if recorded else None,
                synthetic=synthetic,
                changes=Changes(
                    add=parse_add([p for p in data["add_nodes"].split(",") if p.strip()]),
                    remove=_names(data["remove_nodes"]),
                    restore=_names(data["restore_nodes"]),
                    weights=parse_weights(data["weights"]) if data["weights"].strip() else None,
                    top_n=data["top_n"],
                    placer=data["placer"] or None,
                    shares=parse_shares(p for p in data["shares"].split(",") if p.strip()),
                ),
                seed=data["seed"],
                horizon_days=data["horizon_days"],
            )
        except CapacityError as err:
            self.refuse(err)
            return None

    def refuse(self, err: CapacityError) -> None:
        """Show a refusal next to the field its message names (or above the form)."""
        option, _, rest = err.message.partition(": ")
        self.add_error(FIELD_OF_OPTION.get(option), rest if option in FIELD_OF_OPTION else err.message)


def _names(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _day(day) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)
