"""Blobs on the device: sealed under the graph key with AAD ``<sk>/blob/<blobId>``,
uploaded raw with the nonce in ``x-blob-nonce``, under a retention policy."""

from simkit.client.device import Device
from simkit.client.events import DeviceError
from simkit.protocol.records import open_blob, seal_blob


async def upload_blob(
    device: Device, graph_id: str, blob_id: str, data: bytes, policy: str = "retain", ttl_ms=None
) -> dict:
    """Seal and upload; the answer says ``duplicate: true`` when the ID already exists."""
    ring = device.keyring(graph_id)
    if not ring.keys:
        raise DeviceError(f"no key for {graph_id}: cannot seal a blob")
    nonce, ciphertext = seal_blob(
        ring.keys[ring.current], device.storage_key(graph_id), blob_id, data, entropy=device.entropy
    )
    query = {"policy": policy}
    if ttl_ms is not None:
        query["ttl"] = str(ttl_ms)
    response = await device.request(
        "POST",
        f"/graphs/{graph_id}/blobs/{blob_id}",
        query=query,
        raw=ciphertext,
        headers={"content-type": "application/octet-stream", "x-blob-nonce": nonce},
    )
    if response.status != 200:
        raise DeviceError(f"blob upload refused: {response.status} {device.refusal(response)}")
    return response.json()


async def download_blob(device: Device, graph_id: str, blob_id: str) -> bytes | None:
    """Fetch and open a blob under any held epoch's key; None when the relay has none."""
    response = await device.request("GET", f"/graphs/{graph_id}/blobs/{blob_id}")
    if response.status == 404:
        return None
    if response.status != 200:
        raise DeviceError(f"blob download refused: {response.status} {device.refusal(response)}")
    sk, nonce = device.storage_key(graph_id), response.headers["x-blob-nonce"]
    for _, key in sorted(device.keyring(graph_id).keys.items(), reverse=True):
        try:
            return open_blob(key, sk, blob_id, nonce, response.body)
        except ValueError:
            continue
    raise DeviceError(f"blob {blob_id!r} opens under no key this device holds")


async def ack_blob(device: Device, graph_id: str, blob_id: str) -> bool:
    """Acknowledge receipt of a transport blob; returns whether the relay forgot it."""
    response = await device.request("POST", f"/graphs/{graph_id}/blobs/{blob_id}/ack")
    return response.status == 200 and bool(response.json()["forgotten"])


async def delete_blob(device: Device, graph_id: str, blob_id: str) -> bool:
    response = await device.request("DELETE", f"/graphs/{graph_id}/blobs/{blob_id}")
    return response.status == 200
