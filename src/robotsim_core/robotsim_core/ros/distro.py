"""What differs between the ROS 2 distributions robotsim runs on (Humble, Jazzy, Kilted), in one place.

Each name here is an rclpy API that Humble lacks or spells differently, taken from where the running distribution
has it; tests/test_humble_api.py checks that the nodes use nothing else Humble lacks (against Humble's own
sources) and that everything listed here has its fallback."""

from __future__ import annotations

try:  # Iron and later
    from rclpy.event_handler import SubscriptionEventCallbacks
except ImportError:  # Humble: the same class, before its module was renamed
    from rclpy.qos_event import SubscriptionEventCallbacks

__all__ = ['SubscriptionEventCallbacks', 'parameter_client']


class GetParametersClient:
    """Humble's stand-in for the part of ``rclpy.parameter_client.AsyncParameterClient`` (Iron and later) robotsim
    uses: another node's ``get_parameters`` service, called the same way. Owns its service client."""

    def __init__(self, node, remote_node_name: str):
        from rcl_interfaces.srv import GetParameters

        self._request = GetParameters.Request
        self._client = node.create_client(GetParameters, f'{remote_node_name}/get_parameters')

    def wait_for_services(self, timeout_sec: float | None = None) -> bool:
        return self._client.wait_for_service(timeout_sec=timeout_sec)

    def get_parameters(self, names: list[str]):
        """A future whose result's ``values`` are the parameters' rcl_interfaces/ParameterValue, in ``names``'
        order."""
        return self._client.call_async(self._request(names=list(names)))


def parameter_client(node, remote_node_name: str, humble: bool = False):
    """A client of another node's parameters: rclpy's AsyncParameterClient where the distribution has it (Iron and
    later), else (or with ``humble``) :class:`GetParametersClient`."""
    if not humble:
        try:
            from rclpy.parameter_client import AsyncParameterClient
        except ImportError:  # Humble
            pass
        else:
            return AsyncParameterClient(node, remote_node_name)
    return GetParametersClient(node, remote_node_name)
