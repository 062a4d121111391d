"""TradingBot: a simulated brokerage account (orders, watch list, funds, market data).

Behaviour follows the reference backend of bfcl-eval 2026.3.23 closely, including
its quirks (they decide verdicts); each one we keep on purpose is marked ``Quirk``.

State that the reference checker compares (its public attributes), in its order:
``orders``, ``account_info``, ``authenticated``, ``market_status``, ``order_counter``,
``stocks``, ``watch_list``, ``transaction_history``, ``long_context``.

Copies on load: the reference deep-copies the whole scenario. We copy only what a
tool can mutate (the orders and their inner dicts, ``account_info``, ``watch_list``,
``transaction_history``); ``stocks`` and scalars are shared with the config because
no tool ever writes to them.
"""

import copy
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, Dict, List, Mapping, Optional, Union

import attrs

from bfcl_safe.backends import growth
from bfcl_safe.backends.base import Backend
from bfcl_safe.backends.dates import DATE_FORMAT, TIMESTAMP_FORMAT, strptime
from bfcl_safe.backends.seeded import LazyRandom
from bfcl_safe.interp.result_text import frozen_json
from bfcl_safe.interp.tools import tool

#: The simulated "now" of every scenario.
CURRENT_TIME = datetime(2024, 9, 1, 10, 30)


DEFAULT_RANDOM_SEED = 1053520

#: Long-context extension constants this backend reads from ``long_context_data``.
LONG_CONTEXT_KEYS = (
    "AUTOMOBILE_EXTENSION",
    "MA_5_EXTENSION",
    "MA_20_EXTENSION",
    "ORDER_DETAIL_EXTENSION",
    "TECHNOLOGY_EXTENSION",
    "TRANSACTION_HISTORY_EXTENSION",
    "WATCH_LIST_EXTENSION",
)

# Default scenario, used key by key for whatever the config leaves out.
_DEFAULT_ORDERS: dict = {
    12345: {"id": 12345, "order_type": "Buy", "symbol": "AAPL", "price": 210.65, "amount": 10,
            "status": "Completed"},
    12446: {"id": 12446, "order_type": "Sell", "symbol": "GOOG", "price": 2840.56, "amount": 5,
            "status": "Pending"},
}
_DEFAULT_ACCOUNT_INFO: dict = {"account_id": 12345, "balance": 10000.0, "binding_card": 1974202140965533}
_DEFAULT_AUTHENTICATED = False
_DEFAULT_MARKET_STATUS = "Closed"
# Quirk: the default counter equals the id of the second default order, so the first
# order placed on the default state overwrites order 12446 (keeping its dict position).
_DEFAULT_ORDER_COUNTER = 12446


def _stock(price: float, change: float, volume: float, ma5: float, ma20: float) -> dict:
    return {"price": price, "percent_change": change, "volume": volume, "MA(5)": ma5, "MA(20)": ma20}


# Shared, never mutated (no tool writes to ``stocks``).
_DEFAULT_STOCKS: dict = {
    "AAPL": _stock(227.16, 0.17, 2.552, 227.11, 227.09),
    "GOOG": _stock(2840.34, 0.24, 1.123, 2835.67, 2842.15),
    "TSLA": _stock(667.92, -0.12, 1.654, 671.15, 668.20),
    "MSFT": _stock(310.23, 0.09, 3.234, 309.88, 310.11),
    "NVDA": _stock(220.34, 0.34, 1.234, 220.45, 220.67),
    "ALPH": _stock(1320.45, -0.08, 1.567, 1321.12, 1325.78),
    "OMEG": _stock(457.23, 0.12, 2.345, 456.78, 458.12),
    "QUAS": _stock(725.89, -0.03, 1.789, 726.45, 728.00),
    "NEPT": _stock(88.34, 0.19, 0.654, 88.21, 88.67),
    "SYNX": _stock(345.67, 0.11, 2.112, 345.34, 346.12),
    "ZETA": _stock(22.09, -0.05, 0.789, 22.12, 22.34),
}
_DEFAULT_WATCH_LIST = ("NVDA",)

#: Company name -> ticker, as the reference knows them (some tickers have no stock data).
_SYMBOLS_BY_NAME = {
    "Apple": "AAPL",
    "Google": "GOOG",
    "Tesla": "TSLA",
    "Microsoft": "MSFT",
    "Nvidia": "NVDA",
    "Zeta Corp": "ZETA",
    "Alpha Tech": "ALPH",
    "Omega Industries": "OMEG",
    "Quasar Ltd.": "QUAS",
    "Neptune Systems": "NEPT",
    "Synex Solutions": "SYNX",
    "Amazon": "AMZN",
    "Gorilla": "GORI",
}

#: Sector -> (tickers, long-context extension key).
_SECTORS = {
    "Technology": (("AAPL", "GOOG", "MSFT", "NVDA"), "TECHNOLOGY_EXTENSION"),
    "Automobile": (("TSLA", "F", "GM"), "AUTOMOBILE_EXTENSION"),
}


@lru_cache(maxsize=4096)
def _parse_cached(text: str, fmt: str) -> datetime:
    return strptime(text, fmt)


def _parse(text: Any, fmt: str) -> datetime:
    """``datetime.strptime`` (same errors), cached for str input; datetimes are immutable."""
    if type(text) is str:
        return _parse_cached(text, fmt)
    return strptime(text, fmt)


#: Types whose values ``copy.deepcopy`` returns as they are.
_DEEPCOPY_ATOMIC = frozenset((str, int, float, bool, type(None)))


def _copy_orders(orders: Any) -> dict:
    # Same key conversion as the reference: digit strings become ints, the rest stays
    # (Quirk: the dataset's orders hold a stray "order_type": "Buy" entry, kept as is).
    # A plain loop (no function object per call, as a comprehension has) doing the same
    # steps in the same order: the key, then the value, then the insertion. A scalar
    # value skips ``copy.deepcopy``, which would return that very object.
    copied = {}
    for key, value in orders.items():
        if isinstance(key, str) and key.isdigit():
            key = int(key)
        kind = type(value)
        if kind is dict:
            copied[key] = value.copy()
        elif kind in _DEEPCOPY_ATOMIC:
            copied[key] = value
        else:
            copied[key] = copy.deepcopy(value)
    return copied


def _copy_shallow(value: Any) -> Any:
    """A copy deep enough for tools that only add, remove or rebind top-level items."""
    kind = type(value)
    if kind is dict or kind is list:
        return value.copy()
    return copy.deepcopy(value)


@attrs.define(eq=False)
class TradingBot(Backend):
    """A trading account: orders, watch list, balance and market data."""

    orders: dict
    account_info: dict
    authenticated: Any
    market_status: Any
    order_counter: Any
    stocks: dict
    watch_list: list
    transaction_history: list
    long_context: Any
    _extensions: Optional[Mapping[str, Any]] = None
    #: Only transactions draw from it, so the sequence is the reference's.
    _random: LazyRandom = attrs.field(factory=lambda: LazyRandom(DEFAULT_RANDOM_SEED))

    @classmethod
    def from_scenario(cls, config: Mapping[str, Any], long_context_data: Mapping[str, Any] | None) -> "TradingBot":
        """The state the reference's ``_load_scenario`` gives (missing
        keys take defaults); in long-context mode some results get the extension data."""
        if long_context_data is not None:
            missing = [key for key in LONG_CONTEXT_KEYS if key not in long_context_data]
            if missing:
                raise ValueError(f"TradingBot.from_config: long_context_data lacks {', '.join(missing)}")
        orders = _copy_orders(config["orders"]) if "orders" in config else _copy_orders(_DEFAULT_ORDERS)
        seed = config.get("random_seed", DEFAULT_RANDOM_SEED)
        account_info = (
            _copy_shallow(config["account_info"]) if "account_info" in config else dict(_DEFAULT_ACCOUNT_INFO)
        )
        return cls(
            orders=orders,
            account_info=account_info,
            authenticated=config.get("authenticated", _DEFAULT_AUTHENTICATED),
            market_status=config.get("market_status", _DEFAULT_MARKET_STATUS),
            order_counter=config.get("order_counter", _DEFAULT_ORDER_COUNTER),
            stocks=config.get("stocks", _DEFAULT_STOCKS),
            watch_list=(
                _copy_shallow(config["watch_list"]) if "watch_list" in config else list(_DEFAULT_WATCH_LIST)
            ),
            transaction_history=(
                _copy_shallow(config["transaction_history"]) if "transaction_history" in config else []
            ),
            long_context=long_context_data is not None,
            extensions=long_context_data,
            random=LazyRandom(seed),
        )

    def public_state(self) -> dict[str, Any]:
        """The attributes the reference checker compares, in the reference's order."""
        return {
            "orders": self.orders,
            "account_info": self.account_info,
            "authenticated": self.authenticated,
            "market_status": self.market_status,
            "order_counter": self.order_counter,
            "stocks": self.stocks,
            "watch_list": self.watch_list,
            "transaction_history": self.transaction_history,
            "long_context": self.long_context,
        }

    # -- helpers ---------------------------------------------------------------------

    def _extension(self, key: str) -> Any:
        return self._extensions[key]  # type: ignore[index]  # (called in long-context mode: set)

    def _transaction_timestamp(self) -> str:
        """A seeded random moment within a day after CURRENT_TIME.

        Quirk: the bounds go through ``timestamp()``/``fromtimestamp()`` on naive
        datetimes, i.e. the process's local time zone, exactly as in the reference.
        """
        start = int(CURRENT_TIME.timestamp())
        end = int((CURRENT_TIME + timedelta(days=1)).timestamp())
        moment = datetime.fromtimestamp(self._random.randint(start, end))
        return moment.strftime(TIMESTAMP_FORMAT)

    # -- tools -------------------------------------------------------------------------

    @tool
    def get_current_time(self) -> Dict[str, str]:
        """The simulated current time.

        Returns:
            current_time: e.g. "10:30 AM".
        """
        return {"current_time": CURRENT_TIME.strftime("%I:%M %p")}

    @tool
    def get_symbol_by_name(self, name: str) -> Dict[str, str]:
        """Look up a ticker from a company name.

        Args:
            name: company name.
        Returns:
            symbol: the ticker, or "Stock not found".
        """
        return {"symbol": _SYMBOLS_BY_NAME.get(name, "Stock not found")}

    @tool
    def get_stock_info(self, symbol: str) -> Dict[str, Union[float, int, str]]:
        """Market data of one stock.

        Args:
            symbol: ticker.
        Returns:
            price, percent_change, volume, MA(5), MA(20).
        """
        if symbol not in self.stocks:
            return {"error": f"Stock with symbol '{symbol}' not found."}
        if self.long_context:
            stock = self.stocks[symbol].copy()
            # Constant lists of thousands of floats: their JSON is made once (FrozenJSON).
            stock["MA(5)"] = frozen_json(self._extension("MA_5_EXTENSION"))
            stock["MA(20)"] = frozen_json(self._extension("MA_20_EXTENSION"))
            return stock
        return self.stocks[symbol]

    @tool
    def get_order_details(self, order_id: int) -> Dict[str, Union[str, float, int]]:
        """Details of one order.

        Args:
            order_id: id of the order.
        Returns:
            The stored order (plus ``metadata`` in long-context mode).
        """
        if order_id not in self.orders:
            growth.scan(self.orders)
            # Quirk: no space between the two sentences.
            return {
                "error": f"Order with ID {order_id} not found."
                f"Here is the list of orders_id: {list(self.orders.keys())}"
            }
        if self.long_context:
            order = self.orders[order_id].copy()
            symbol = order["symbol"]
            metadata = {}
            for key, template in self._extension("ORDER_DETAIL_EXTENSION").items():
                try:
                    metadata[key] = template.format(symbol=symbol)
                except KeyError as exc:
                    return {"error": f"KeyError during formatting: {exc}"}
            order["metadata"] = metadata
            return order
        # Quirk: returns the stored value itself, which may be a bare string.
        return self.orders[order_id]

    @tool
    def cancel_order(self, order_id: int) -> Dict[str, Union[int, str]]:
        """Cancel an order that is not completed.

        Args:
            order_id: id of the order.
        Returns:
            order_id, status ("Cancelled").
        """
        if order_id not in self.orders:
            return {"error": f"Order with ID {order_id} not found."}
        if self.orders[order_id]["status"] == "Completed":
            return {"error": f"Can't cancel order {order_id}. Order is already completed."}
        self.orders[order_id]["status"] = "Cancelled"
        return {"order_id": order_id, "status": "Cancelled"}

    @tool
    def place_order(
        self, order_type: str, symbol: str, price: float, amount: int
    ) -> Dict[str, Union[int, str, float]]:
        """Place a buy or sell order (stored as "Open", reported as "Pending").

        Args:
            order_type: "Buy" or "Sell".
            symbol: ticker.
            price: price per share.
            amount: number of shares.
        Returns:
            order_id, order_type, status, price, amount.
        """
        if not self.authenticated:
            return {"error": "User not authenticated. Please log in to place an order."}
        if symbol not in self.stocks:
            return {"error": f"Invalid stock symbol: {symbol}"}
        if price <= 0 or amount <= 0:
            return {"error": "Price and amount must be positive values."}
        if order_type.lower() == "buy":
            # Quirk: only buys are checked against the balance; ``int(amount)`` truncates.
            total_cost = float(price) * int(amount)
            balance = self.account_info.get("balance", 0)
            if total_cost > balance:
                return {
                    "error": f"Insufficient funds: required ${total_cost:.2f} "
                    f"but only ${balance:.2f} available."
                }
        price = float(price)
        growth.store(order_type, symbol, amount, records=6)
        order_id = self.order_counter
        # Quirk: an existing order with this id is overwritten.
        self.orders[order_id] = {
            "id": order_id,
            "order_type": order_type,
            "symbol": symbol,
            "price": price,
            "amount": amount,
            "status": "Open",
        }
        self.order_counter += 1
        return {"order_id": order_id, "order_type": order_type, "status": "Pending", "price": price,
                "amount": amount}

    @tool
    def withdraw_funds(self, amount: float) -> Dict[str, Union[str, float]]:
        """Withdraw money from the balance (market must be open).

        Args:
            amount: amount to withdraw.
        Returns:
            status, new_balance.
        """
        if not self.authenticated:
            return {"error": "User not authenticated. Please log in to make a transaction."}
        if self.market_status != "Open":
            return {"error": "Market is closed. Transactions are not allowed."}
        if amount <= 0:
            return {"error": "Transaction amount must be positive."}
        if amount > self.account_info["balance"]:
            return {"error": "Insufficient funds for withdrawal."}
        growth.store(amount, records=3)
        self.account_info["balance"] -= amount
        self.transaction_history.append(
            {"type": "withdrawal", "amount": amount, "timestamp": self._transaction_timestamp()}
        )
        return {"status": "Withdrawal successful", "new_balance": self.account_info["balance"]}

    @tool
    def get_account_info(self) -> Dict[str, Any]:
        """Account id, balance and bound card.

        Returns:
            account_id, balance, binding_card.
        """
        if not self.authenticated:
            return {"error": "User not authenticated. Please log in to view account information."}
        return self.account_info

    @tool
    def trading_login(self, username: str, password: str) -> Dict[str, str]:
        """Log in (credentials are not checked).

        Args:
            username: user name.
            password: password.
        Returns:
            status: message.
        """
        if self.authenticated:
            return {"status": "Already logged in"}
        self.authenticated = True
        return {"status": "Logged in successfully"}

    @tool
    def trading_get_login_status(self) -> Dict[str, bool]:
        """Whether a user is logged in.

        Returns:
            status: bool.
        """
        return {"status": bool(self.authenticated)}

    @tool
    def trading_logout(self) -> Dict[str, str]:
        """Log out.

        Returns:
            status: message.
        """
        if not self.authenticated:
            return {"status": "No user is currently logged in"}
        self.authenticated = False
        return {"status": "Logged out successfully"}

    @tool
    def fund_account(self, amount: float) -> Dict[str, Union[str, float]]:
        """Add money to the balance (allowed while the market is closed).

        Args:
            amount: amount to add.
        Returns:
            status, new_balance.
        """
        if not self.authenticated:
            return {"error": "User not authenticated. Please log in to fund the account."}
        if amount <= 0:
            return {"error": "Funding amount must be positive."}
        growth.store(amount, records=3)
        self.account_info["balance"] += amount
        self.transaction_history.append(
            {"type": "deposit", "amount": amount, "timestamp": self._transaction_timestamp()}
        )
        return {"status": "Account funded successfully", "new_balance": self.account_info["balance"]}

    @tool
    def remove_stock_from_watchlist(self, symbol: str) -> Dict[str, str]:
        """Remove a ticker from the watch list.

        Args:
            symbol: ticker.
        Returns:
            status: message.
        """
        if not self.authenticated:
            return {"error": "User not authenticated. Please log in to modify the watchlist."}
        growth.scan(self.watch_list)
        if symbol not in self.watch_list:
            return {"error": f"Stock {symbol} not found in watchlist."}
        self.watch_list.remove(symbol)
        return {"status": f"Stock {symbol} removed from watchlist successfully."}

    @tool
    def get_watchlist(self) -> Any:
        """The watch list.

        Returns:
            watchlist: tickers.
        """
        if not self.authenticated:
            # Quirk: a list, not a dict.
            return ["Error: User not authenticated. Please log in to view the watchlist."]
        if self.long_context:
            # Quirk: a bare list in long-context mode (its last item is the literal ``...``).
            watch_list = self.watch_list.copy()
            watch_list.extend(self._extension("WATCH_LIST_EXTENSION"))
            return watch_list
        return {"watchlist": self.watch_list}

    @tool
    def get_order_history(self) -> Any:
        """Ids of all orders.

        Returns:
            history: order ids.
        """
        if not self.authenticated:
            return [{"error": "User not authenticated. Please log in to view order history."}]
        growth.scan(self.orders)
        return {"history": list(self.orders.keys())}

    @tool
    def get_transaction_history(
        self, start_date: Optional[str] = None, end_date: Optional[str] = None
    ) -> Any:
        """Deposits and withdrawals between two dates (inclusive, midnight bounds).

        Args:
            start_date: 'YYYY-MM-DD', optional.
            end_date: 'YYYY-MM-DD', optional.
        Returns:
            transaction_history: matching transactions.
        """
        if not self.authenticated:
            return [{"error": "User not authenticated. Please log in to view transaction history."}]
        # Quirk: any falsy bound (None, "", 0, []) means "unbounded".
        start = _parse(start_date, DATE_FORMAT) if start_date else datetime.min
        end = _parse(end_date, DATE_FORMAT) if end_date else datetime.max
        growth.scan(self.transaction_history)
        history = [
            transaction
            for transaction in self.transaction_history
            if start <= _parse(transaction["timestamp"], TIMESTAMP_FORMAT) <= end
        ]
        if self.long_context:
            history.extend(self._extension("TRANSACTION_HISTORY_EXTENSION"))
        return {"transaction_history": history}

    @tool
    def get_available_stocks(self, sector: str) -> Dict[str, List[str]]:
        """Tickers of a sector ("Technology" or "Automobile").

        Args:
            sector: sector name.
        Returns:
            stock_list: tickers (empty for an unknown sector).
        """
        known = _SECTORS.get(sector)
        if known is None:
            return {"stock_list": []}
        symbols, extension_key = known
        stock_list = list(symbols)
        if self.long_context:
            stock_list.extend(self._extension(extension_key))
        return {"stock_list": stock_list}

    @tool
    def filter_stocks_by_price(
        self, stocks: List[str], min_price: float, max_price: float
    ) -> Dict[str, List[str]]:
        """Keep the tickers whose price lies in [min_price, max_price].

        Args:
            stocks: tickers.
            min_price: lower bound.
            max_price: upper bound.
        Returns:
            filtered_stocks: tickers (unknown ones count as price 0).
        """
        filtered = []
        for symbol in stocks:
            price = self.stocks.get(symbol, {}).get("price", 0)
            # Same comparison operators and order as the reference (error texts name them).
            if price >= min_price and price <= max_price:
                filtered.append(symbol)
        return {"filtered_stocks": filtered}

    @tool
    def add_to_watchlist(self, stock: str) -> Dict[str, List[str]]:
        """Add a known ticker to the watch list (no login needed).

        Args:
            stock: ticker.
        Returns:
            watchlist: the watch list.
        """
        # Quirk: no authentication check; unknown tickers are silently ignored.
        growth.scan(self.watch_list)
        if stock not in self.watch_list:
            if stock in self.stocks:
                growth.store(stock)
                self.watch_list.append(stock)
        return {"watchlist": self.watch_list}

    @tool
    def notify_price_change(self, stocks: List[str], threshold: float) -> Dict[str, str]:
        """Report the tickers whose absolute percent change reaches a threshold.

        Args:
            stocks: tickers.
            threshold: percent change threshold.
        Returns:
            notification: message.
        """
        changed = [
            symbol
            for symbol in stocks
            if symbol in self.stocks and abs(self.stocks[symbol]["percent_change"]) >= threshold
        ]
        if changed:
            return {"notification": f"Stocks {', '.join(changed)} have significant price changes."}
        return {"notification": "No significant price changes in the selected stocks."}
