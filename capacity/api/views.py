"""Reservations, the placement preview and pools: thin views over capacity.services."""

from __future__ import annotations

from collections import Counter

from django.db.models import Count
from django.utils import timezone
from django_filters import FilterSet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework import status as http
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from capacity import series_hooks, services
from capacity.access import pool_for
from capacity.filtersets import DESCRIPTIONS, ReservationFilterSet, error_text
from capacity.placement import NOT_FOUND, CapacityError
from capacity.render import render_reservation, render_reservations
from capacity.rollups import capacity_by_pool
from config.api.base import BerthAPIView
from config.api.pages import list_source, position_of, queryset_source
from config.api.params import bool_param
from config.api.schema import errors
from config.replica import replica_reads
from inventory.models import Node, Pool

from .inputs import IDEMPOTENCY_HEADER_PARAMETER, ReservationInputSerializer, request_input
from .serializers import (
    PREVIEW_EXAMPLES,
    REQUEST_EXAMPLES,
    RESERVATION_EXAMPLES,
    PoolSerializer,
    PreviewSerializer,
    ReservationSerializer,
)

# A create answers a reservation, or with `repeat` a series: `{"series": …}` (the series app's answer,
# capacity.series_hooks; asked when the schema is made, after every app is ready).
CREATED = PolymorphicProxySerializer(
    component_name="ReservationOrSeries",
    serializers=lambda: [ReservationSerializer, *series_hooks.answers()],
    resource_type_field_name=None,
)


def filter_parameters(filterset: type[FilterSet]) -> list[OpenApiParameter]:
    """Return the OpenAPI query parameters of a FilterSet's filters, described as it describes them."""
    out = []
    for name, declared in filterset.base_filters.items():
        choices = declared.extra.get("choices")
        enum = [value for value, _ in choices] if choices else None
        out.append(OpenApiParameter(name, str, enum=enum, description=DESCRIPTIONS.get(name, "")))
    return out


NEWEST = ("created_at", "id")  # the reservations list's order, newest first (an index's)


def by_slug(pool: Pool) -> tuple:
    return (pool.slug,)


RESERVATION_ID = OpenApiParameter("reservation_id", OpenApiTypes.INT, OpenApiParameter.PATH)


class ReservationsView(BerthAPIView):
    """List the caller's reservations, or create one."""

    @extend_schema(
        operation_id="reservations_list",
        tags=["reservations"],
        summary="List reservations",
        description=(
            "The caller's reservations (operators: everyone's), newest first. The filters combine;"
            " `from` and `to` select the reservations whose window overlaps [from, to). A value that"
            " cannot be read answers 400 INVALID_INPUT naming its parameter; the `next` link keeps"
            " the filters."
        ),
        parameters=filter_parameters(ReservationFilterSet),
        responses={200: ReservationSerializer(many=True), **errors(400, 401, 404)},
    )
    def get(self, request):
        filters = ReservationFilterSet(
            request.query_params, services.list_reservations(scope=self.scope), request=request
        )
        if not filters.is_valid():
            raise ValidationError(error_text(filters.errors))
        return self.paginated(
            queryset_source(filters.qs, NEWEST, descending=True),
            lambda row: position_of(row, NEWEST),
            lambda page: render_reservations(page, self.scope, queue=services.queue_places(page)),
        )

    @extend_schema(
        operation_id="reservations_create",
        tags=["reservations"],
        summary="Create a reservation",
        description=(
            "Validates, charges quota and places the request inline. Answers 201 with the reservation, "
            "placed or pending (the reason is in its Unschedulable condition); the same idempotencyKey "
            "with the same input answers 200 with the first reservation, with other input 409 "
            "IDEMPOTENCY_CONFLICT. The `Idempotency-Key` header means exactly what idempotencyKey "
            "does (both present and different: 400). When placing it took spot work back, the 201 "
            "says so in `preempted`. A booking past a limit of the pool's policy (maxDuration, "
            "maxLeadTime, maxFutureGpuHours) answers 422 POLICY_LIMIT naming the limit, and writes nothing. "
            "With `repeat` it books a series (docs/series.md): 201 with `series: {id, occurrences: "
            "[{reservationId, start, status}]}`, each occurrence placed or pending with its reason; "
            "with `allOrNothing` 409 SERIES_NOT_PLACED lists the occurrences that would not place. "
            "In a pool with an outside check (policyWebhook), a tenant already waiting on as many checks "
            "as it may at once is answered at once 429 THROTTLED with Retry-After, nothing written."
        ),
        parameters=[IDEMPOTENCY_HEADER_PARAMETER],
        request=ReservationInputSerializer,
        responses={
            201: CREATED,
            200: CREATED,
            **errors(400, 401, 403, 404, 409, 422, 429),
        },
        examples=[*REQUEST_EXAMPLES, *RESERVATION_EXAMPLES],
    )
    def post(self, request):
        data = request_input(request)
        create_series = series_hooks.way("api_create")
        if create_series is not None and ("repeat" in data or "allOrNothing" in data):
            return create_series(self, request, data)
        admission = services.admission_context(data.get("tenantId"), request.user.get_username(), "user")
        result = services.reserve(data, scope=self.scope, admission=admission)
        body = render_reservation(
            result.reservation, self.scope, queue=services.queue_places([result.reservation])
        )
        if result.outcome is not None and result.outcome.preempted:
            # The caller's own spot work it ended is named; another tenant's is counted.
            body["preempted"] = services.visible_reservations(result.outcome.preempted, self.scope)
        return Response(body, status=http.HTTP_201_CREATED if result.created else http.HTTP_200_OK)


# The methods other apps answer on one reservation's endpoint: capacity answers GET (ReservationView);
# an app adds a method with its schema as a class that defines it (policy: PATCH keepWhenIdle,
# policy.api.keep_when_idle) in its AppConfig.ready, and the URLconf, loaded once every app is ready,
# builds the view with them: one path, one URL name, one view. A method no app added answers 405.
_METHODS: list[type] = []


def register_reservation_methods(methods: type) -> None:
    """Add the methods a class defines to one reservation's endpoint (again is harmless)."""
    if methods not in _METHODS:
        _METHODS.append(methods)


def with_methods(view: type) -> type:
    """Return `view` with the methods apps registered (theirs before its own)."""
    if not _METHODS:
        return view
    return type(view.__name__, (*_METHODS, view), {"__module__": view.__module__, "__doc__": view.__doc__})


class ReservationView(BerthAPIView):
    """One reservation.

    Its PATCH (keepWhenIdle) is the policy app's (policy.api.keep_when_idle, added through
    register_reservation_methods).
    """

    @extend_schema(
        operation_id="reservations_get",
        tags=["reservations"],
        summary="Get a reservation",
        description="Another tenant's reservation answers 404, as one that does not exist.",
        parameters=[RESERVATION_ID],
        responses={200: ReservationSerializer, **errors(401, 404)},
    )
    def get(self, request, reservation_id):
        reservation = services.get(reservation_id, scope=self.scope)
        return Response(
            render_reservation(reservation, self.scope, queue=services.queue_places([reservation]))
        )


class ReleaseView(BerthAPIView):
    """Release a reservation."""

    @extend_schema(
        operation_id="reservations_release",
        tags=["reservations"],
        summary="Release a reservation",
        description="Ends its bookings now and refunds quota; releasing twice answers the released reservation.",
        parameters=[RESERVATION_ID],
        request=None,
        responses={200: ReservationSerializer, **errors(401, 404)},
    )
    def post(self, request, reservation_id):
        return Response(render_reservation(services.release(reservation_id, scope=self.scope), self.scope))


class PreviewView(BerthAPIView):
    """Run the placement pipeline without the commit."""

    @extend_schema(
        operation_id="capacity_preview",
        tags=["capacity"],
        summary="Preview a placement",
        description=(
            "Takes the input of reservations.create (the idempotencyKey is checked, never stored) and "
            "answers where it would land now, or why nothing fits. Needs read access to the pool only: "
            "no quota, no admission. With explain=true every node of the pool is planned and each "
            "rejected node is listed with its filter and reason."
        ),
        parameters=[
            OpenApiParameter("explain", bool, description="List every rejected node."),
            IDEMPOTENCY_HEADER_PARAMETER,
        ],
        request=ReservationInputSerializer,
        responses={200: PreviewSerializer, **errors(400, 401, 403, 404, 422)},
        examples=PREVIEW_EXAMPLES,
    )
    def post(self, request):
        explain = bool_param(request, "explain")
        preview = services.preview(request_input(request), scope=self.scope, explain=explain)
        body: dict = {"fits": preview.fits, "candidates": preview.candidates}
        if not preview.fits:
            body["reason"] = services.redact(preview.reason, self.scope)
            if preview.preemptible is not None:
                body["preemptible"] = preview.preemptible
            if preview.hints:
                body["hints"] = [services.redact(h, self.scope) for h in preview.hints]
            if preview.unsatisfiable is not None:
                body["unsatisfiable"] = services.redact(preview.unsatisfiable, self.scope)
        if explain:
            body["rejected"] = [
                {"nodeId": r.node_id, "filter": r.filter, "reason": services.redact(r.reason, self.scope)}
                for r in preview.plan.rejected
            ]
        return Response(PreviewSerializer(body).data)


def pool_data(pool: Pool, node_count: int, capacity: list[dict]) -> dict:
    """Return the API dict of a pool whose site and owner are loaded, with its capacity now."""
    return {
        "id": pool.slug,
        "name": pool.name,
        "site": pool.site.slug,
        "archived": pool.archived,
        "ownerTenant": pool.owner_tenant.slug if pool.owner_tenant_id else None,
        "nodeCount": node_count,
        "capacity": capacity,
    }


def render_pools(pools: list[Pool]) -> list[dict]:
    capacity = capacity_by_pool([p.pk for p in pools], timezone.now(), kept=True)
    counts = Counter(
        dict(
            Node.objects.filter(pool__in=pools)
            .values("pool")
            .annotate(n=Count("pk"))
            .values_list("pool", "n")
            .order_by()
        )
    )
    return PoolSerializer([pool_data(p, counts[p.pk], capacity[p.pk]) for p in pools], many=True).data


def visible_pool(scope: services.Scope, slug: str) -> Pool:
    pool = pool_for(scope, slug)
    if pool is None:
        raise CapacityError(NOT_FOUND, f"no pool {slug}")
    return pool


class PoolsView(BerthAPIView):
    """The pools the caller may use, with capacity per device class."""

    @extend_schema(
        operation_id="pools_list",
        tags=["pools"],
        summary="List pools",
        description="Operators see every pool; tenants the pools they may book into.",
        responses={200: PoolSerializer(many=True), **errors(400, 401, 404)},
    )
    @replica_reads
    def get(self, request):
        pools = sorted(services.pools_for(self.scope), key=lambda pool: pool.slug)
        return self.paginated(list_source(pools, by_slug), by_slug, render_pools)


class PoolView(BerthAPIView):
    """One pool."""

    @extend_schema(
        operation_id="pools_get",
        tags=["pools"],
        summary="Get a pool",
        description="A pool the caller may not use answers 404, as one that does not exist.",
        responses={200: PoolSerializer, **errors(401, 404)},
    )
    @replica_reads
    def get(self, request, slug):
        return Response(render_pools([visible_pool(self.scope, slug)])[0])
